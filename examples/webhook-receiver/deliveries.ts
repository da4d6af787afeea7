import createClient from 'openapi-fetch';
import { settings } from '../settings';
import type { components, paths } from '../rest-client/openapi';

type WebhookAttempt = components['schemas']['WebhookAttempt'];

/**
 * What an operator does when a receiver had trouble (docs/admin.md "Delivery attempts", "Redelivery"): read the
 * endpoint's attempts, newest first, and ask for the last failed event again; the dispatcher sends it with the same
 * `webhook-id`, and its attempt is listed with trigger `redelivery`.
 *
 * Reads `API_URL`, `API_KEY` (a secret key with `webhooks:admin`: `npm run apikey -- create ops --scope webhooks:admin`)
 * and `ENDPOINT_ID`; `EVENT_ID` redelivers that event instead of the last failed one. Prints one line per attempt and
 * one per step; exits 1 on any failure.
 */

const { apiUrl, apiKey } = settings();
const endpointId = process.env.ENDPOINT_ID ?? '';
if (!/^[1-9][0-9]*$/.test(endpointId)) throw new Error('set ENDPOINT_ID to the id `npm run webhook -- list` shows');
const client = createClient<paths>({ baseUrl: `${apiUrl}/v1`, headers: { authorization: `Bearer ${apiKey}` } });
const path = { id: Number(endpointId) };

function describe(attempt: WebhookAttempt): string {
  const outcome = attempt.statusCode === null ? attempt.error : `HTTP ${attempt.statusCode}`;
  return `${attempt.startedAt} ${attempt.trigger} #${attempt.attempt} of ${attempt.eventId}: ${outcome} in ${attempt.durationMs} ms ${JSON.stringify(attempt.responseBody ?? '')}`;
}

async function main(): Promise<void> {
  const listed = await client.GET('/admin/webhook-endpoints/{id}/attempts', { params: { path, query: { limit: 10 } } });
  if (!listed.data) throw new Error(`listing attempts: ${listed.error?.code}: ${listed.error?.message}`);
  for (const attempt of listed.data) console.log(describe(attempt));
  const failed = listed.data.find((attempt) => attempt.statusCode === null || attempt.statusCode < 200 || attempt.statusCode > 299);
  const eventId = process.env.EVENT_ID ?? failed?.eventId;
  if (!eventId) {
    console.log('no failed attempt among the last 10: nothing to redeliver');
    return;
  }
  const queued = await client.POST('/admin/webhook-endpoints/{id}/redeliveries', { params: { path }, body: { eventId } });
  if (!queued.data) throw new Error(`redelivering: ${queued.error?.code}: ${queued.error?.message}`);
  console.log(`redelivery ${queued.data.id} of ${eventId} queued`);
  // The instance delivering to the endpoint makes it within moments; its attempt is then the newest of that event.
  for (let wait = 0; wait < 50; wait++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const again = await client.GET('/admin/webhook-endpoints/{id}/attempts', { params: { path, query: { eventId, limit: 1 } } });
    const [newest] = again.data ?? [];
    if (newest?.trigger === 'redelivery' && Date.parse(newest.startedAt) >= Date.parse(queued.data.requestedAt) - 1000) {
      console.log(`redelivered: ${describe(newest)}`);
      return;
    }
  }
  throw new Error('the redelivery was not made within 10 s');
}

main().catch((error: unknown) => {
  console.error((error as Error).message);
  process.exit(1);
});
