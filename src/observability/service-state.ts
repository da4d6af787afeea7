/** Set by the shutdown sequence; `/readyz` then answers 503. */
export interface ServiceState {
  draining: boolean;
}
