import * as deadline from '../../src/database/database-deadline';
import { announce, announcingFirstCall, replaceFunction } from './replace-export';

/**
 * Without the deadline's query runner: each database call runs on the DataSource's manager (in a
 * transaction of its own when asked for), as the service does on the embedded database: TypeORM
 * takes a pooled connection per statement, with no query runner held for the call, no timer, no
 * race with the deadline, and no per-request budget. Reads go to the primary: the bench has no replica.
 */
replaceFunction(deadline, 'withinDeadline', 'src/database/database-deadline', () =>
  announcingFirstCall('withinDeadline replaced: first database call without the deadline', ({ writer }, work, { transaction = false } = {}) =>
    transaction ? writer.transaction(work) : work(writer.manager),
  ),
);
announce('deadline off: withinDeadline() runs work on dataSource.manager');
