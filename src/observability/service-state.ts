/** Whether the service is draining: set by the shutdown sequence (http/graceful-shutdown.ts), read by `/readyz`, which then answers 503. */
export interface ServiceState {
  draining: boolean;
}
