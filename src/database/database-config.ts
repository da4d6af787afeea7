/** Where the data lives: MySQL (production) or the embedded SQLite file (docs/configuration.md, DATABASE_URL). */
export type DatabaseConfig =
  /** `replicaMaxLagSeconds`: a replica further behind leaves the read rotation. */
  | { readonly type: 'mysql'; readonly url: string; readonly replicaUrls?: readonly string[]; readonly replicaMaxLagSeconds?: number }
  /** `path` is a file path, or `':memory:'` for a throw-away database. */
  | { readonly type: 'sqlite'; readonly path: string };
