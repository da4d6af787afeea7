import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Key kinds, scopes, origins, per-key rate limit, roll budget, expiry and last use (docs/api-keys.md). Keys made before
 * get the defaults: secret, both scopes, no expiry, so they keep working as they did.
 */
export class AddApiKeyKinds1795651200000 implements MigrationInterface {
  name = 'AddApiKeyKinds1795651200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const mysql = queryRunner.connection.driver.options.type === 'mysql';
    const datetime = mysql ? 'DATETIME(6)' : 'DATETIME';
    const columns = [
      "kind VARCHAR(16) NOT NULL DEFAULT 'secret'",
      "scopes VARCHAR(64) NOT NULL DEFAULT 'pets:read pets:write'",
      'origins TEXT NULL',
      'rate_limit INT NULL',
      'budget_key_id BIGINT NULL',
      `expires_at ${datetime} NULL`,
      `last_used_at ${datetime} NULL`,
    ];
    if (mysql) {
      await queryRunner.query(`ALTER TABLE api_key ${columns.map((column) => `ADD COLUMN ${column}`).join(', ')}`);
    } else {
      // SQLite adds one column per statement.
      for (const column of columns) await queryRunner.query(`ALTER TABLE api_key ADD COLUMN ${column}`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const column of ['last_used_at', 'expires_at', 'budget_key_id', 'rate_limit', 'origins', 'scopes', 'kind']) {
      await queryRunner.query(`ALTER TABLE api_key DROP COLUMN ${column}`);
    }
  }
}
