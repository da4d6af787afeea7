import type { MigrationInterface, QueryRunner } from 'typeorm';

/** One migration for both drivers: SQLite needs `INTEGER PRIMARY KEY` for AUTOINCREMENT. `idx_pet_status_id` serves filtered listPets. */
export class CreatePetAndApiKey1763769600000 implements MigrationInterface {
  name = 'CreatePetAndApiKey1763769600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.driver.options.type === 'mysql') {
      const table = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci';
      await queryRunner.query(`CREATE TABLE pet (
        id BIGINT NOT NULL AUTO_INCREMENT,
        name VARCHAR(100) NOT NULL,
        category_id BIGINT NOT NULL,
        status VARCHAR(16) NOT NULL,
        PRIMARY KEY (id),
        INDEX idx_pet_status_id (status, id)
      ) ${table}`);
      await queryRunner.query(`CREATE TABLE api_key (
        id BIGINT NOT NULL AUTO_INCREMENT,
        name VARCHAR(100) NOT NULL,
        key_hash VARCHAR(64) NOT NULL,
        key_hint VARCHAR(8) NOT NULL,
        created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
        revoked_at DATETIME(6) NULL,
        PRIMARY KEY (id),
        UNIQUE INDEX uq_api_key_key_hash (key_hash)
      ) ${table}`);
    } else {
      await queryRunner.query(`CREATE TABLE pet (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name VARCHAR(100) NOT NULL,
        category_id BIGINT NOT NULL,
        status VARCHAR(16) NOT NULL
      )`);
      await queryRunner.query('CREATE INDEX idx_pet_status_id ON pet (status, id)');
      await queryRunner.query(`CREATE TABLE api_key (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name VARCHAR(100) NOT NULL,
        key_hash VARCHAR(64) NOT NULL,
        key_hint VARCHAR(8) NOT NULL,
        created_at DATETIME NOT NULL DEFAULT (datetime('now')),
        revoked_at DATETIME NULL
      )`);
      await queryRunner.query('CREATE UNIQUE INDEX uq_api_key_key_hash ON api_key (key_hash)');
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE api_key');
    await queryRunner.query('DROP TABLE pet');
  }
}
