import { AdminPageCursor, AdminPageSize } from '../validation/admin-page.inputs';
import { ADMIN_LIMITS } from '../limits';

/** The list of the audit trail (opaque-cursor.ts encodeIdCursor). */
export const AUDIT_EVENTS_LIST = 'audit-events';

/** Query of `GET /v1/admin/audit-events` (docs/admin.md "Audit trail"): newest first. */
export class ListAuditEventsArgs {
  @AdminPageSize()
  limit: number = ADMIN_LIMITS.listDefault;

  @AdminPageCursor(AUDIT_EVENTS_LIST)
  after?: string;
}
