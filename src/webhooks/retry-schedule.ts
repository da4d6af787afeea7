/**
 * The Standard Webhooks retry schedule, in seconds (WEBHOOK_RETRY_SCHEDULE's default; docs/webhooks.md "Retries"): the
 * first attempt at once, then each retry this long after the previous failure: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h,
 * 20 h, 24 h.
 */
export const WEBHOOK_RETRY_SCHEDULE_SECONDS: readonly number[] = Object.freeze([0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]);
