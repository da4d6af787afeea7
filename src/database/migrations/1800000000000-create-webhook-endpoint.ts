import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhook endpoints (docs/webhooks.md): one row per endpoint with its URL, status filter and signing secrets, its
 * delivery state (the feed position delivered last, the retry in progress, enabled or disabled and why) and the lease
 * of the one instance delivering to it. Times are UTC, written on the database's clock.
 */
export class CreateWebhookEndpoint1800000000000 implements MigrationInterface {
  name = 'CreateWebhookEndpoint1800000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const mysql = queryRunner.connection.driver.options.type === 'mysql';
    const time = mysql ? 'DATETIME(3)' : 'DATETIME';
    await queryRunner.query(`CREATE TABLE webhook_endpoint (
        id ${mysql ? 'INT NOT NULL AUTO_INCREMENT PRIMARY KEY' : 'INTEGER PRIMARY KEY AUTOINCREMENT'},
        url VARCHAR(2048) NOT NULL,
        status_filter VARCHAR(16) NULL,
        description VARCHAR(200) NULL,
        secrets TEXT NOT NULL,
        state VARCHAR(16) NOT NULL,
        disabled_reason VARCHAR(200) NULL,
        cursor_seq BIGINT NOT NULL,
        created_at ${time} NOT NULL,
        last_success_at ${time} NULL,
        last_failure_at ${time} NULL,
        failures_in_row INT NOT NULL DEFAULT 0,
        attempt INT NOT NULL DEFAULT 0,
        next_attempt_at ${time} NULL,
        lease_holder CHAR(36) NULL,
        lease_expires_at ${time} NULL
      )${mysql ? ' ENGINE=InnoDB' : ''}`);
    await queryRunner.query('CREATE INDEX idx_webhook_endpoint_state ON webhook_endpoint (state, next_attempt_at)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE webhook_endpoint');
  }
}
