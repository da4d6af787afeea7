import type { MigrationInterface, QueryRunner } from 'typeorm';

/** One row per (API key, Idempotency-Key): the input's fingerprint and, once done, the pet it created. */
export class CreateIdempotencyKey1763856000000 implements MigrationInterface {
  name = 'CreateIdempotencyKey1763856000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.driver.options.type === 'mysql') {
      await queryRunner.query(`CREATE TABLE idempotency_key (
        id BIGINT NOT NULL AUTO_INCREMENT,
        api_key_id BIGINT NOT NULL,
        idempotency_key VARCHAR(255) NOT NULL,
        request_hash VARCHAR(64) NOT NULL,
        pet_id BIGINT NULL,
        created_at DATETIME(6) NOT NULL,
        PRIMARY KEY (id),
        UNIQUE INDEX uq_idempotency_key (api_key_id, idempotency_key),
        INDEX idx_idempotency_created_at (created_at)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`);
    } else {
      await queryRunner.query(`CREATE TABLE idempotency_key (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        api_key_id BIGINT NOT NULL,
        idempotency_key VARCHAR(255) NOT NULL,
        request_hash VARCHAR(64) NOT NULL,
        pet_id BIGINT NULL,
        created_at DATETIME NOT NULL
      )`);
      await queryRunner.query('CREATE UNIQUE INDEX uq_idempotency_key ON idempotency_key (api_key_id, idempotency_key)');
      await queryRunner.query('CREATE INDEX idx_idempotency_created_at ON idempotency_key (created_at)');
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE idempotency_key');
  }
}
