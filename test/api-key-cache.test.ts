import { setTimeout as sleep } from 'node:timers/promises';
import { ApiKey } from '../src/auth/api-key.entity';
import { ApiKeyService } from '../src/auth/api-key.service';
import { openDatabase } from '../src/database/open-database';
import { createTestDatabase, TEST_DATABASE_URL } from './helpers/test-database';
import { request, startTestApp } from './helpers/test-app';

// MySQL only: defined in the MariaDB run, which .ci/run always makes (two processes need a shared database).
const onMysql = TEST_DATABASE_URL ? test : () => undefined;

/** API_KEY_CACHE_SECONDS (README "Security"): found keys are trusted for a short time. */
describe('the API key cache', () => {
  test('when a key in use is revoked in the same process, then its next request is 401 at once', async () => {
    const t = await startTestApp({ config: { apiKeyCacheSeconds: 60 } });
    try {
      const { apiKey, key } = await t.apiKeys.create('cached');
      expect((await request(t, 'GET', '/v1/pets', { apiKey: key })).status).toBe(200);
      expect((await request(t, 'GET', '/v1/pets', { apiKey: key })).status).toBe(200);
      await t.apiKeys.revoke(apiKey.id);
      expect((await request(t, 'GET', '/v1/pets', { apiKey: key })).status).toBe(401);
    } finally {
      await t.close();
    }
  });

  onMysql('when another process revokes a key, then this one refuses it within API_KEY_CACHE_SECONDS, and at once with 0', async () => {
    const { database, drop } = await createTestDatabase();
    // The "other process": its own DataSource, as the apikey CLI or another instance has.
    const other = await openDatabase(database);
    const cached = await startTestApp({ database, config: { apiKeyCacheSeconds: 1 } });
    const uncached = await startTestApp({ database, config: { apiKeyCacheSeconds: 0 } });
    try {
      const admin = new ApiKeyService(other.getRepository(ApiKey));
      const { apiKey, key } = await admin.create('revoked elsewhere');
      expect((await request(cached, 'GET', '/v1/pets', { apiKey: key })).status).toBe(200);
      expect((await request(uncached, 'GET', '/v1/pets', { apiKey: key })).status).toBe(200);

      await admin.revoke(apiKey.id);
      expect((await request(uncached, 'GET', '/v1/pets', { apiKey: key })).status).toBe(401);
      // Still trusted from the cache: the documented bound, not a bug.
      expect((await request(cached, 'GET', '/v1/pets', { apiKey: key })).status).toBe(200);
      await sleep(1100);
      expect((await request(cached, 'GET', '/v1/pets', { apiKey: key })).status).toBe(401);
    } finally {
      await cached.close();
      await uncached.close();
      await other.destroy();
      await drop();
    }
  });
});
