import { GraphQLClient, gql } from 'graphql-request';

/**
 * `npm run demo:graphql`: every GraphQL operation through a real client (graphql-request).
 * Environment: API_KEY (required), GRAPHQL_URL (default http://127.0.0.1:3000/graphql).
 * Prints each operation and its result as JSON; exits 1 on any error.
 */
async function main(): Promise<void> {
  const apiKey = process.env.API_KEY;
  if (!apiKey) throw new Error('set API_KEY, e.g. API_KEY=$(cat data/dev-api-key)');
  const client = new GraphQLClient(process.env.GRAPHQL_URL ?? 'http://127.0.0.1:3000/graphql', {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  const show = (operation: string, result: unknown) => process.stdout.write(`${operation}\n${JSON.stringify(result, null, 2)}\n\n`);

  const created = await client.request<{ createPet: { id: string } }>(
    gql`
      mutation CreatePet($input: NewPetInput!) {
        createPet(input: $input) {
          id
          name
          categoryId
          status
        }
      }
    `,
    { input: { name: 'Biscuit', categoryId: 2, status: 'pending' } },
  );
  show('createPet(input: { name: "Biscuit", categoryId: 2, status: pending })', created);
  show(
    'pets(limit: 5)',
    await client.request(gql`
      {
        pets(limit: 5) {
          id
          name
          categoryId
          status
        }
      }
    `),
  );
  show(
    'pets(status: pending)',
    await client.request(gql`
      query Pending {
        pets(status: pending) {
          id
          name
          status
        }
      }
    `),
  );
  show(
    `pet(id: "${created.createPet.id}")  # deprecated`,
    await client.request(
      gql`
        query Pet($id: ID!) {
          pet(id: $id) {
            id
            name
          }
        }
      `,
      { id: created.createPet.id },
    ),
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`demo:graphql failed: ${(error as Error).message}\n`);
  process.exit(1);
});
