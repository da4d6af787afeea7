import 'reflect-metadata';
import { loadConfig } from './src/config';
import { createDataSource } from './src/database/data-source';

/**
 * The DataSource of the TypeORM CLI (`npm run db:migrate`, `npm run db:revert`): the same
 * configuration as the server (DATABASE_URL, or the embedded SQLite file).
 */
export default createDataSource(loadConfig(process.env).database);
