// The GraphQL playground's bootstrap, served as playground.js by src/graphql/playground.ts (docs/explorers.md); runs in the
// browser. A key form comes before GraphiQL, which fetches the schema as it mounts: without a key, a 401 and "Error fetching
// schema". The key is kept in sessionStorage (this tab only), never in storage that outlives it. Each run's graphql-ws client sends the
// Headers tab as its connection_init payload.
(function () {
  'use strict';
  var KEY_ITEM = 'pet-store:api-key';
  var DEFAULT_QUERY = [
    '# Pet Store GraphQL playground',
    '#',
    '# Run the query with the play button (Ctrl-Enter).',
    '# The key you entered is in the Headers tab; the',
    '# Docs button shows the schema. Subscriptions run',
    '# too, over a WebSocket:',
    '#   subscription { petCreated { id name status } }',
    '',
    '{',
    '  pets(limit: 20) {',
    '    id',
    '    name',
    '    categoryId',
    '    status',
    '  }',
    '}',
    '',
  ].join('\n');
  var form = document.getElementById('key-form');
  var graphqlPath = form.dataset.graphqlPath;
  var wsUrl = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + graphqlPath;
  var input = document.getElementById('key-input');
  var status = document.getElementById('key-status');
  function fetcher(params, options) {
    var headers = (options && options.headers) || {};
    var wsClient = graphqlWs.createClient({ url: wsUrl, connectionParams: headers, retryAttempts: 0 });
    return GraphiQL.createFetcher({ url: graphqlPath, wsClient: wsClient })(params, options);
  }
  function start(key) {
    form.hidden = true;
    document.getElementById('key-in-use').hidden = false;
    ReactDOM.createRoot(document.getElementById('graphiql')).render(
      React.createElement(GraphiQL, {
        fetcher: fetcher,
        storage: sessionStorage,
        defaultQuery: DEFAULT_QUERY,
        headers: JSON.stringify({ Authorization: 'Bearer ' + key }, null, 2),
        isHeadersEditorEnabled: true,
        shouldPersistHeaders: false,
      }),
    );
  }
  form.addEventListener('submit', function (event) {
    event.preventDefault();
    var key = input.value.trim();
    if (!key) {
      status.textContent = 'Paste your API key first.';
      return;
    }
    status.textContent = 'Checking the key…';
    fetch(graphqlPath, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + key },
      body: JSON.stringify({ query: '{ __typename }' }),
    }).then(
      function (response) {
        if (response.status === 200) {
          sessionStorage.setItem(KEY_ITEM, key);
          start(key);
        } else if (response.status === 401) {
          status.textContent = 'That key was refused (401 Unauthorized): check it, or get one with ' + form.dataset.keyCommand + '.';
        } else {
          status.textContent = 'The server answered ' + response.status + '; try again in a moment.';
        }
      },
      function () {
        status.textContent = 'The server could not be reached; is it running?';
      },
    );
  });
  document.getElementById('key-forget').addEventListener('click', function () {
    sessionStorage.clear();
    location.reload();
  });
  var saved = sessionStorage.getItem(KEY_ITEM);
  if (saved) start(saved);
  else input.focus();
})();
