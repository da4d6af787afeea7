import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhook delivery attempts, redeliveries and recoveries (docs/admin.md "Delivery attempts", "Redelivery", "Recovery"):
 * one row per attempt (read newest first per endpoint, per event for a recovery, by age for the purge), the redeliveries
 * asked for and not yet made, and each recovery with its cursor and counts.
 */
export class CreateWebhookAttempt1802000000000 implements MigrationInterface {
  name = 'CreateWebhookAttempt1802000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const mysql = queryRunner.connection.driver.options.type === 'mysql';
    const id = mysql ? 'BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY' : 'INTEGER PRIMARY KEY AUTOINCREMENT';
    const time = mysql ? 'DATETIME(3)' : 'DATETIME';
    const table = mysql ? ' ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin' : '';
    await queryRunner.query(`CREATE TABLE webhook_attempt (
        id ${id},
        endpoint_id INT NOT NULL,
        event_seq BIGINT NOT NULL,
        attempt INT NOT NULL,
        trigger_kind VARCHAR(16) NOT NULL,
        started_at ${time} NOT NULL,
        duration_ms INT NOT NULL,
        status_code INT NULL,
        error VARCHAR(64) NULL,
        response_body VARCHAR(1024) NULL
      )${table}`);
    await queryRunner.query('CREATE INDEX idx_webhook_attempt_endpoint ON webhook_attempt (endpoint_id, id)');
    await queryRunner.query('CREATE INDEX idx_webhook_attempt_event ON webhook_attempt (endpoint_id, event_seq, id)');
    await queryRunner.query('CREATE INDEX idx_webhook_attempt_started ON webhook_attempt (started_at)');
    await queryRunner.query(`CREATE TABLE webhook_redelivery (
        id ${id},
        endpoint_id INT NOT NULL,
        event_seq BIGINT NOT NULL,
        requested_at ${time} NOT NULL
      )${table}`);
    await queryRunner.query('CREATE INDEX idx_webhook_redelivery_endpoint ON webhook_redelivery (endpoint_id, id)');
    await queryRunner.query(`CREATE TABLE webhook_recovery (
        id ${id},
        endpoint_id INT NOT NULL,
        since_at ${time} NULL,
        after_seq BIGINT NOT NULL,
        up_to_seq BIGINT NOT NULL,
        state VARCHAR(16) NOT NULL,
        cursor_seq BIGINT NOT NULL,
        events_total INT NOT NULL DEFAULT 0,
        sent INT NOT NULL DEFAULT 0,
        failed INT NOT NULL DEFAULT 0,
        reason VARCHAR(200) NULL,
        requested_at ${time} NOT NULL,
        started_at ${time} NULL,
        finished_at ${time} NULL
      )${table}`);
    await queryRunner.query('CREATE INDEX idx_webhook_recovery_endpoint ON webhook_recovery (endpoint_id, state)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE webhook_recovery');
    await queryRunner.query('DROP TABLE webhook_redelivery');
    await queryRunner.query('DROP TABLE webhook_attempt');
  }
}
