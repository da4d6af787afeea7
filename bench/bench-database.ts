import { hash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { type RowDataPacket, createConnection } from 'mysql2/promise';
import { ApiKey } from '../src/auth/api-key.entity';
import { ApiKeyService } from '../src/auth/api-key.service';
import { createDatabase } from '../test/support/mysql-admin';
import { openDatabase } from '../src/database/open-database';
import { encodePetCursor } from '../src/pets/pet-cursor';
import { PetStatus } from '../src/pets/pet-status.enum';
import { PetRepository } from '../src/pets/pet.repository';
import { seedPets } from '../src/pets/pet.seed';

/**
 * A key in the format of keys made before kinds existed (`pst_`, secret, CRC-32 of the secret): every version of the
 * service accepts it, so a `--baseline` from before kinds runs on the same key.
 */
export function keyEveryVersionAccepts(): string {
  const secret = randomBytes(32).toString('base64url');
  return `pst_${secret}${Buffer.from(crc32(secret).toString(16).padStart(8, '0'), 'hex').toString('base64url')}`;
}

/**
 * Drops and recreates the database of `url` ({@link createDatabase}), runs the migrations, seeds
 * `petCount` pets with {@link seedPets} and creates one API key through ApiKeyService (a secret key, which expires).
 * With `everyVersion`, the key's text is then replaced by one in the format every version accepts (see above): the
 * row keeps its kind, scopes and expiry, so the service does all the checks it does for a new key.
 *
 * @returns the API key (ids 1 to `petCount` are the seeded pets).
 */
export async function prepareDatabase(url: string, petCount: number, { everyVersion = false } = {}): Promise<string> {
  await createDatabase(url, { replace: true });
  const database = await openDatabase({ type: 'mysql', url });
  try {
    await seedPets(database.writer, petCount);
    const { apiKey, key } = await new ApiKeyService(database).create('benchmark');
    if (!everyVersion) return key;
    const legacy = keyEveryVersionAccepts();
    await database.writer.getRepository(ApiKey).update({ id: apiKey.id }, { keyHash: hash('sha256', legacy, 'hex'), keyHint: legacy.slice(-4) });
    return legacy;
  } finally {
    await database.close();
  }
}

/**
 * Numbers the pets 1 to n in id order: a Galera node steps AUTO_INCREMENT by the cluster size,
 * and the scenarios pick ids from 1 to the pet count.
 */
export async function renumberPets(url: string): Promise<void> {
  const connection = await createConnection(url);
  try {
    await connection.query('SET @n := 0');
    await connection.query('UPDATE pet SET id = (@n := @n + 1) ORDER BY id');
  } finally {
    await connection.end();
  }
}

/**
 * Grows `pet` to `target` rows by copying existing rows (`INSERT … SELECT`, doubling at most),
 * then refreshes the index statistics. Expects ids 1 to n with no gaps (a freshly seeded table).
 *
 * @returns the row count reached.
 */
export async function growPets(url: string, target: number): Promise<number> {
  const connection = await createConnection(url);
  try {
    const count = async () => {
      const [rows] = await connection.query<(RowDataPacket & { n: number | string })[]>('SELECT COUNT(*) AS n FROM pet');
      return Number(rows[0].n);
    };
    // Explicit ids keep them contiguous (1 to `target`), so a random get always finds its pet;
    // AUTO_INCREMENT alone leaves gaps after INSERT … SELECT.
    for (let rows = await count(); rows < target; rows = await count()) {
      const batch = Math.min(rows, target - rows);
      await connection.query(`INSERT INTO pet (id, name, category_id, status) SELECT id + ${rows}, name, category_id, status FROM pet WHERE id <= ${batch}`);
    }
    await connection.query('ANALYZE TABLE pet');
    return count();
  } finally {
    await connection.end();
  }
}

/** Where the scale curve's deep pages start: `page` of each list, its cursor, and the id it follows. */
export interface DeepPages {
  /** The page number: 5,000 at 1,000,000 rows, the middle of smaller tables. */
  page: number;
  /** `?limit=100`: the cursor after pet (page - 1) × 100. */
  all: { afterId: number; cursor: string };
  /** `?status=sold&limit=20`: the cursor after the ((page - 1) × 20)th sold pet. */
  sold: { afterId: number; cursor: string };
}

/**
 * Finds the start of page 5,000 (or of the middle page, in a smaller table) of two lists, so
 * that the bench can ask for a deep page as a client who walked there would (docs/pagination.md).
 * Uses one OFFSET query, here only, to find it; the service never does.
 *
 * @param url - the scale database, ids 1 to `rows` with no gaps ({@link growPets}).
 * @param rows - its row count.
 */
export async function deepPages(url: string, rows: number): Promise<DeepPages> {
  const page = Math.max(2, Math.min(5000, Math.floor(rows / 200)));
  const connection = await createConnection(url);
  try {
    const [sold] = await connection.query<(RowDataPacket & { id: number | string })[]>('SELECT id FROM pet WHERE status = ? ORDER BY id LIMIT 1 OFFSET ?', [
      PetStatus.sold,
      (page - 1) * 20 - 1,
    ]);
    const all = (page - 1) * 100;
    const soldId = Number(sold[0].id);
    return {
      page,
      all: { afterId: all, cursor: encodePetCursor({ afterId: all }) },
      sold: { afterId: soldId, cursor: encodePetCursor({ status: PetStatus.sold, afterId: soldId }) },
    };
  } finally {
    await connection.end();
  }
}

/** One row of MySQL's EXPLAIN, as reported. */
export interface ExplainRow {
  type: string;
  key: string | null;
  rows: number;
  Extra: string | null;
}

/**
 * EXPLAINs the statements the service runs for list and get: PetRepository's own SQL, with
 * parameters bound as the service binds them (a page of 20 reads 21 rows).
 *
 * @param deep - when given, the deep pages' statements too.
 * @returns each statement's plan, keyed by a short label.
 */
export async function explainQueries(url: string, deep?: DeepPages): Promise<Record<string, ExplainRow>> {
  const database = await openDatabase({ type: 'mysql', url });
  try {
    const { sql } = new PetRepository(database);
    const statements: Array<[string, string, unknown[]]> = [
      ['list limit=20', sql.list, [0, 21]],
      ['list status=sold limit=20', sql.listByStatus, ['sold', 0, 21]],
      ['get by id', sql.byId, [5000]],
      ...(deep
        ? ([
            ['deep page limit=100', sql.list, [deep.all.afterId, 101]],
            ['deep page status=sold limit=20', sql.listByStatus, ['sold', deep.sold.afterId, 21]],
          ] as Array<[string, string, unknown[]]>)
        : []),
    ];
    const plans: Record<string, ExplainRow> = {};
    for (const [label, statement, parameters] of statements) {
      const [{ type, key, rows, Extra }] = await database.writer.query<ExplainRow[]>(`EXPLAIN ${statement}`, parameters);
      plans[label] = { type, key, rows: Number(rows), Extra };
    }
    return plans;
  } finally {
    await database.close();
  }
}

/** @returns the server's version string, e.g. `10.11.19-MariaDB-…`. */
export async function databaseVersion(url: string): Promise<string> {
  const connection = await createConnection(url);
  try {
    const [rows] = await connection.query<(RowDataPacket & { v: string })[]>('SELECT VERSION() AS v');
    return rows[0].v;
  } finally {
    await connection.end();
  }
}

/** Creates `count` more API keys (secret keys, as prepareDatabase's) for the feed phase's followers. @returns their texts. */
export async function createApiKeys(url: string, count: number): Promise<string[]> {
  const database = await openDatabase({ type: 'mysql', url });
  try {
    const service = new ApiKeyService(database);
    const keys: string[] = [];
    for (let i = 0; i < count; i++) keys.push((await service.create(`benchmark follower ${i + 1}`)).key);
    return keys;
  } finally {
    await database.close();
  }
}

/**
 * Waits until every pet has its feed position (`pet.seq`, stamped by the service's sequencer after start-up): the seeded
 * pets, and those a baseline without the feed created, are stamped in batches when the service starts, and that work
 * must not fall into a measured run. Returns at once on a database without the column.
 *
 * @returns milliseconds waited; `timedOut` when pets were still waiting after `timeoutMs`.
 */
export async function waitUntilStamped(url: string, timeoutMs = 60_000): Promise<{ ms: number; timedOut: boolean }> {
  const began = Date.now();
  const connection = await createConnection(url);
  try {
    const [columns] = await connection.query<RowDataPacket[]>("SHOW COLUMNS FROM pet LIKE 'seq'");
    if (columns.length === 0) return { ms: 0, timedOut: false };
    for (;;) {
      const [rows] = await connection.query<RowDataPacket[]>('SELECT id FROM pet WHERE seq IS NULL LIMIT 1');
      if (rows.length === 0) return { ms: Date.now() - began, timedOut: false };
      if (Date.now() - began > timeoutMs) return { ms: Date.now() - began, timedOut: true };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await connection.end();
  }
}

/** The feed positions of pets `ids` (those stamped), and the feed's head. */
export async function feedPositions(url: string, ids: number[]): Promise<{ seqs: Array<[number, number]>; head: number }> {
  const connection = await createConnection(url);
  try {
    const seqs: Array<[number, number]> = [];
    for (let i = 0; i < ids.length; i += 1000) {
      const [rows] = await connection.query<(RowDataPacket & { id: number | string; seq: number | string })[]>(
        'SELECT id, seq FROM pet WHERE id IN (?) AND seq IS NOT NULL',
        [ids.slice(i, i + 1000)],
      );
      for (const row of rows) seqs.push([Number(row.id), Number(row.seq)]);
    }
    const [head] = await connection.query<(RowDataPacket & { head: number | string })[]>("SELECT head FROM pet_feed WHERE name = 'pets'");
    return { seqs, head: Number(head[0]?.head ?? 0) };
  } finally {
    await connection.end();
  }
}

/**
 * Waits until webhook endpoint `endpointId` has had every event of the feed: every pet stamped and the endpoint's cursor
 * (`webhook_endpoint.cursor_seq`, the position delivered last) at the feed's head, polling every 100 ms.
 * @returns the milliseconds waited, the events owed at first and still owed (0 when it caught up), and whether
 *   `timeoutMs` passed first.
 */
export async function waitUntilDelivered(
  url: string,
  endpointId: number,
  timeoutMs: number,
): Promise<{ ms: number; owedAtFirst: number; behind: number; timedOut: boolean }> {
  const began = Date.now();
  let owedAtFirst: number | undefined;
  const connection = await createConnection(url);
  try {
    for (;;) {
      const [rows] = await connection.query<(RowDataPacket & { unstamped: number | string; head: number | string; cursorSeq: number | string | null })[]>(
        `SELECT (SELECT COUNT(*) FROM pet WHERE seq IS NULL) AS unstamped, (SELECT head FROM pet_feed WHERE name = 'pets') AS head,
           (SELECT cursor_seq FROM webhook_endpoint WHERE id = ?) AS cursorSeq`,
        [endpointId],
      );
      const { unstamped, head, cursorSeq } = rows[0];
      const behind = cursorSeq === null ? 0 : Number(unstamped) + Math.max(0, Number(head) - Number(cursorSeq));
      owedAtFirst ??= behind;
      if (behind === 0) return { ms: Date.now() - began, owedAtFirst, behind, timedOut: false };
      if (Date.now() - began > timeoutMs) return { ms: Date.now() - began, owedAtFirst, behind, timedOut: true };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await connection.end();
  }
}
