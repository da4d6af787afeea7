import * as registry from '../../src/observability/metrics.registry';
import { announce, replaceFunction } from './replace-export';

/** Without per-request metrics: the Metrics object's per-request methods do nothing; the registry, its gauges and /metrics stay. */
replaceFunction(registry, 'createMetrics', 'src/observability/metrics.registry', (createMetrics) => () => ({
  ...createMetrics(),
  observeRequest: () => {},
  countDeprecatedCall: () => {},
}));
announce('metrics off: createMetrics() returns observeRequest and countDeprecatedCall as no-ops');
