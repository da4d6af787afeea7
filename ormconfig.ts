import 'reflect-metadata';
import { loadConfig } from './src/config';
import { createDataSource } from './src/database/data-source';

/**
 * The DataSource of TypeORM's own CLI, `npm run typeorm -- <command>` (e.g. `migration:show`;
 * docs/operations.md "Running on MySQL"): the server's configuration (DATABASE_URL, or the embedded SQLite
 * file under the working directory), its entities and migrations, printing what the CLI reports
 * (the schema and migration steps) plainly on the console. The service's own commands
 * (`npm run db:migrate`, `db:revert`, `db:seed`) add the migration lock and clear messages.
 */
const dataSource = createDataSource(loadConfig(process.env).database);
dataSource.setOptions({ logger: 'simple-console', logging: ['schema', 'migration', 'error'] });
export default dataSource;
