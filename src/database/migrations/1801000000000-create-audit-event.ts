import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit trail of administration actions (docs/admin.md "Audit trail"): one row per action, done or refused, read
 * newest first by id.
 */
export class CreateAuditEvent1801000000000 implements MigrationInterface {
  name = 'CreateAuditEvent1801000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const mysql = queryRunner.connection.driver.options.type === 'mysql';
    await queryRunner.query(`CREATE TABLE audit_event (
        id ${mysql ? 'BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY' : 'INTEGER PRIMARY KEY AUTOINCREMENT'},
        occurred_at ${mysql ? 'DATETIME(3)' : 'DATETIME'} NOT NULL,
        channel VARCHAR(8) NOT NULL,
        actor_key_id BIGINT NULL,
        action VARCHAR(64) NOT NULL,
        target_type VARCHAR(32) NOT NULL,
        target_id VARCHAR(64) NULL,
        request_id VARCHAR(128) NULL,
        address VARCHAR(64) NULL,
        outcome VARCHAR(64) NOT NULL
      )${mysql ? ' ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin' : ''}`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE audit_event');
  }
}
