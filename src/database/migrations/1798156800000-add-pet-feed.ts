import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The change feed (docs/events.md): `pet.seq`, the feed position the sequencer stamps on each committed pet, unique, with
 * `(status, seq)` for a filtered feed; and `pet_feed`, one row holding the feed's head and the sequencer's lease. Pets
 * stored before stay unstamped until the sequencer's first batches, which stamp them in id order.
 */
export class AddPetFeed1798156800000 implements MigrationInterface {
  name = 'AddPetFeed1798156800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const mysql = queryRunner.connection.driver.options.type === 'mysql';
    await queryRunner.query('ALTER TABLE pet ADD COLUMN seq BIGINT NULL');
    await queryRunner.query('CREATE UNIQUE INDEX uq_pet_seq ON pet (seq)');
    await queryRunner.query('CREATE INDEX idx_pet_status_seq ON pet (status, seq)');
    await queryRunner.query(`CREATE TABLE pet_feed (
        name VARCHAR(32) NOT NULL PRIMARY KEY,
        head BIGINT NOT NULL,
        leader CHAR(36) NULL,
        lease_expires_at ${mysql ? 'DATETIME(3)' : 'DATETIME'} NULL
      )${mysql ? ' ENGINE=InnoDB' : ''}`);
    await queryRunner.query("INSERT INTO pet_feed (name, head) VALUES ('pets', 0)");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const mysql = queryRunner.connection.driver.options.type === 'mysql';
    await queryRunner.query('DROP TABLE pet_feed');
    await queryRunner.query(`DROP INDEX idx_pet_status_seq${mysql ? ' ON pet' : ''}`);
    await queryRunner.query(`DROP INDEX uq_pet_seq${mysql ? ' ON pet' : ''}`);
    await queryRunner.query('ALTER TABLE pet DROP COLUMN seq');
  }
}
