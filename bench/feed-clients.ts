import http from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';

/**
 * The followers of the feed phase (bench/README.md "Feed"), run in a child process of the bench (`fork`), one process per
 * kind, so that their parsing does not delay the load generator's clock: `count` clients of one kind, each on one of
 * `keys` in turn, each keeping the pet ids it receives and when (`performance.timeOrigin + performance.now()`, the
 * clock the bench stamps each create's answer with).
 *
 * - `sse`: `GET /v1/events` with `Accept: text/event-stream` (from now), raw `http`, reading `data:` lines;
 * - `ws`: a WebSocket with graphql-transport-ws by hand (`connection_init`, `subscribe`, `pong`), `subscription` the
 *   operation given;
 * - `webhook`: an HTTP receiver on 127.0.0.1 (a port of its own per client) that answers every request 204 and keeps the
 *   pet id of each delivery's body (the JSON of `GET /v1/events`: `{"id": cursor, "type": …, "pet": {"id": …}}`); its URL
 *   is in the `connected` answer, for the bench to register as a webhook endpoint of the service.
 *
 * Messages from the bench: `{ type: 'connect' }`, `{ type: 'received', id }` (how many clients got pet `id`),
 * `{ type: 'results', answers, seqs }`; each is answered by one message.
 */

/** The kinds of follower: an SSE stream, a WebSocket subscription, a webhook endpoint. */
export type FollowerKind = 'sse' | 'ws' | 'webhook';

/** What the bench sends first (in `process.argv[2]`, JSON). */
export interface FeedClientsSetup {
  kind: FollowerKind;
  /** The service's base URL (not used by `webhook`: the service comes to it). */
  url: string;
  /** API keys, one per client in turn (none for `webhook`). */
  keys: string[];
  count: number;
  /** For `ws`: the subscription document and the root field that carries `{ id }` (`petCreated`, or `petEvents` with `pet { id }`). */
  subscription?: { query: string; field: string };
  /** Clients opening at once (the service refuses more than 20 unauthenticated sockets of one address). */
  openAtOnce: number;
}

/** Per kind: what arrived compared with what was created. */
export interface FeedDelivery {
  kind: FollowerKind;
  clients: number;
  /** Clients that were connected and had the warm-up event (those measured). */
  live: number;
  /** Clients that failed to connect or never had the warm-up event (not measured), with the first few reasons. */
  failed: number;
  /** Measured clients whose stream ended before the results were asked for. */
  ended: number;
  failures: string[];
  /** Events expected: created pets × live clients. */
  expected: number;
  received: number;
  /** Events received again by the same client. */
  duplicates: number;
  /** Expected events a client never received. */
  missed: number;
  /** Clients that missed at least one. */
  clientsMissing: number;
  /** Events that arrived after one with a later feed position (`seq`). */
  outOfOrder: number;
  /** Events whose pet was not among the creates answered 201. */
  foreign: number;
  /** Latency from a create's 201 answer to the event's arrival, per event per client, milliseconds (negative: before the answer). */
  latency: { p50: number; p90: number; p99: number; max: number; min: number; mean: number };
  /** This process's CPU time over the measured creates, milliseconds (user + system). */
  clientCpuMs: number;
}

export type FeedClientsRequest =
  | { type: 'connect' }
  | { type: 'received'; id: number }
  | { type: 'mark' }
  | { type: 'results'; answers: Array<[id: number, answeredAt: number]>; seqs: Array<[id: number, seq: number]>; warmUpIds: number[] };

export type FeedClientsReply =
  | { type: 'connected'; open: number; failed: number; failures: string[]; /** `webhook`: each open receiver's URL. */ urls: string[] }
  | { type: 'received'; id: number; clients: number }
  | { type: 'marked' }
  | { type: 'results'; delivery: FeedDelivery };

/** One client's arrivals, and whether its stream is alive. */
interface Client {
  ids: number[];
  at: number[];
  open: boolean;
  error?: string;
  /** A webhook receiver's URL. */
  url?: string;
  close: () => void;
}

const now = () => performance.timeOrigin + performance.now();

/** An SSE client: collects the pet id of each `data:` line (`{"id": cursor, "type": …, "pet": {"id": …}}`). */
function openSse(url: string, key: string): Promise<Client> {
  return new Promise((resolve) => {
    const client: Client = { ids: [], at: [], open: false, close: () => request.destroy() };
    const request = http.get(`${url}/v1/events`, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' }, agent: false }, (response) => {
      if (response.statusCode !== 200) {
        client.error = `SSE ${response.statusCode}`;
        response.resume();
        resolve(client);
        return;
      }
      client.open = true;
      response.setEncoding('utf8');
      let rest = '';
      response.on('data', (chunk: string) => {
        const arrived = now();
        const lines = (rest + chunk).split('\n');
        rest = lines.pop()!;
        for (const line of lines) {
          if (!line.startsWith('data:')) continue;
          const match = /"pet":\{"id":"?(\d+)/.exec(line);
          if (match) {
            client.ids.push(Number(match[1]));
            client.at.push(arrived);
          }
        }
      });
      response.on('close', () => {
        client.open = false;
        client.error ??= 'SSE stream ended';
      });
      resolve(client);
    });
    request.on('error', (error) => {
      client.open = false;
      client.error = `SSE ${error.message}`;
      resolve(client);
    });
  });
}

/** A graphql-transport-ws client with one subscription; resolves once the subscribe message is sent. */
function openWs(url: string, key: string, subscription: { query: string; field: string }): Promise<Client> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws', { perMessageDeflate: false });
    const client: Client = { ids: [], at: [], open: false, close: () => socket.terminate() };
    const pattern = new RegExp(`"${subscription.field}":\\{(?:"cursor":"[^"]*",)?(?:"pet":\\{)?"id":"?(\\d+)`);
    let settled = false;
    const settle = () => {
      if (!settled) {
        settled = true;
        resolve(client);
      }
    };
    socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${key}` } })));
    socket.on('message', (data: Buffer) => {
      const arrived = now();
      const text = data.toString();
      const match = pattern.exec(text);
      if (match) {
        client.ids.push(Number(match[1]));
        client.at.push(arrived);
        return;
      }
      const message = JSON.parse(text) as { type: string; payload?: unknown };
      if (message.type === 'connection_ack') {
        socket.send(JSON.stringify({ type: 'subscribe', id: '1', payload: { query: subscription.query } }));
        client.open = true;
        settle();
      } else if (message.type === 'ping') socket.send('{"type":"pong"}');
      else if (message.type === 'error' || message.type === 'complete' || message.type === 'next') {
        client.error ??= `WS ${text.slice(0, 200)}`;
      }
    });
    socket.on('close', (code, reason) => {
      client.open = false;
      client.error ??= `WS closed ${code} ${reason.toString()}`;
      settle();
    });
    socket.on('error', (error) => {
      client.error ??= `WS ${error.message}`;
      settle();
    });
  });
}

/**
 * A webhook receiver on 127.0.0.1: answers every request 204 and keeps the pet id of each body that has one, stamped when
 * the body has arrived.
 */
function openWebhook(): Promise<Client> {
  return new Promise((resolve) => {
    const server = http.createServer((request, response) => {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (chunk: string) => (body += chunk));
      request.on('end', () => {
        const arrived = now();
        let id: unknown;
        try {
          id = (JSON.parse(body) as { pet?: { id?: unknown } }).pet?.id;
        } catch {
          // not an event: answered, not counted
        }
        if (id !== undefined) {
          client.ids.push(Number(id));
          client.at.push(arrived);
        }
        response.writeHead(204).end();
      });
    });
    const client: Client = {
      ids: [],
      at: [],
      open: false,
      close: () => {
        server.closeAllConnections();
        server.close();
      },
    };
    server.once('error', (error) => {
      client.error = `webhook receiver ${error.message}`;
      resolve(client);
    });
    server.listen(0, '127.0.0.1', () => {
      client.open = true;
      client.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/feed-bench`;
      resolve(client);
    });
  });
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

function main(): void {
  const setup = JSON.parse(process.argv[2]) as FeedClientsSetup;
  const clients: Client[] = [];
  let cpuAtMark: NodeJS.CpuUsage | undefined;
  const reply = (message: FeedClientsReply) => process.send!(message);
  process.on('message', (request: FeedClientsRequest) => {
    void (async () => {
      switch (request.type) {
        case 'connect': {
          let next = 0;
          const open = (index: number) =>
            setup.kind === 'webhook'
              ? openWebhook()
              : setup.kind === 'sse'
                ? openSse(setup.url, setup.keys[index % setup.keys.length])
                : openWs(setup.url, setup.keys[index % setup.keys.length], setup.subscription!);
          const worker = async () => {
            while (next < setup.count) clients.push(await open(next++));
          };
          await Promise.all(Array.from({ length: setup.openAtOnce }, worker));
          const failed = clients.filter((c) => !c.open);
          reply({
            type: 'connected',
            open: clients.length - failed.length,
            failed: failed.length,
            failures: [...new Set(failed.map((c) => c.error ?? '?'))].slice(0, 5),
            urls: clients.flatMap((c) => (c.open && c.url ? [c.url] : [])),
          });
          return;
        }
        case 'received':
          reply({ type: 'received', id: request.id, clients: clients.filter((c) => c.ids.includes(request.id)).length });
          return;
        case 'mark':
          cpuAtMark = process.cpuUsage();
          reply({ type: 'marked' });
          return;
        case 'results': {
          const cpu = process.cpuUsage(cpuAtMark);
          reply({ type: 'results', delivery: tally(setup, clients, request, (cpu.user + cpu.system) / 1000) });
          for (const client of clients) client.close();
          setTimeout(() => process.exit(0), 100).unref();
          return;
        }
      }
    })();
  });
}

/** Compares each live client's arrivals with the creates: exactly once, in feed order, and how late. */
function tally(setup: FeedClientsSetup, clients: Client[], request: Extract<FeedClientsRequest, { type: 'results' }>, clientCpuMs: number): FeedDelivery {
  const answeredAt = new Map(request.answers);
  const seqOf = new Map(request.seqs);
  const warmUp = new Set(request.warmUpIds);
  // Measured: the clients that had the last warm-up event (so were live before the first measured create).
  const live = clients.filter((c) => c.open || c.ids.length > 0).filter((c) => request.warmUpIds.length === 0 || c.ids.includes(request.warmUpIds.at(-1)!));
  const latencies: number[] = [];
  let received = 0;
  let duplicates = 0;
  let missed = 0;
  let clientsMissing = 0;
  let outOfOrder = 0;
  let foreign = 0;
  for (const client of live) {
    const seen = new Set<number>();
    let lastSeq = 0;
    for (let i = 0; i < client.ids.length; i++) {
      const id = client.ids[i];
      if (warmUp.has(id)) continue;
      const answered = answeredAt.get(id);
      if (answered === undefined) {
        foreign++;
        continue;
      }
      received++;
      if (seen.has(id)) {
        duplicates++;
        continue;
      }
      seen.add(id);
      const seq = seqOf.get(id) ?? 0;
      if (seq < lastSeq) outOfOrder++;
      lastSeq = Math.max(lastSeq, seq);
      latencies.push(client.at[i] - answered);
    }
    const missing = answeredAt.size - seen.size;
    missed += missing;
    if (missing > 0) clientsMissing++;
  }
  const sorted = Float64Array.from(latencies).sort();
  const failedClients = clients.filter((c) => !live.includes(c));
  const round = (value: number) => Math.round(value * 10) / 10;
  return {
    kind: setup.kind,
    clients: setup.count,
    live: live.length,
    failed: failedClients.length,
    ended: live.filter((c) => !c.open).length,
    failures: [...new Set(failedClients.map((c) => c.error ?? 'no warm-up event'))].slice(0, 5),
    expected: answeredAt.size * live.length,
    received,
    duplicates,
    missed,
    clientsMissing,
    outOfOrder,
    foreign,
    latency: {
      p50: round(percentile(sorted, 0.5)),
      p90: round(percentile(sorted, 0.9)),
      p99: round(percentile(sorted, 0.99)),
      max: round(sorted.length ? sorted[sorted.length - 1] : NaN),
      min: round(sorted.length ? sorted[0] : NaN),
      mean: round(sorted.length ? latencies.reduce((sum, value) => sum + value, 0) / sorted.length : NaN),
    },
    clientCpuMs: Math.round(clientCpuMs),
  };
}

if (require.main === module) main();
