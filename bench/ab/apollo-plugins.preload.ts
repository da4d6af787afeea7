import * as legacyJsonStatus from '../../src/graphql/legacy-json-status.plugin';
import * as queryLimits from '../../src/graphql/query-limits';
import * as unavailableStatus from '../../src/graphql/unavailable-status.plugin';
import { announce, loadBuilt, replaceFunction } from './replace-export';

const costLimit = loadBuilt<{ costLimitPlugin: (...args: never[]) => unknown }>('graphql/cost-limit.plugin');
const operationSummary = loadBuilt<{ operationSummaryPlugin: (...args: never[]) => unknown }>('graphql/operation-summary.plugin');

/**
 * Without our Apollo plugins: each plugin of the service's list is an empty plugin (no hooks), and
 * GraphQL Armor's plugin (field suggestions hidden in production) is left out; Armor's validation
 * rules, which run once per document, and Apollo's own "disabled" markers stay.
 */
const none = () => ({});
replaceFunction(costLimit, 'costLimitPlugin', 'src/graphql/cost-limit.plugin', () => none);
replaceFunction(operationSummary, 'operationSummaryPlugin', 'src/graphql/operation-summary.plugin', () => none);
replaceFunction(legacyJsonStatus, 'legacyJsonStatusPlugin', 'src/graphql/legacy-json-status.plugin', () => none);
replaceFunction(unavailableStatus, 'unavailableStatusPlugin', 'src/graphql/unavailable-status.plugin', () => none);
replaceFunction(queryLimits, 'armorSettings', 'src/graphql/query-limits', (armorSettings) => (production) => ({ ...armorSettings(production), plugins: [] }));
announce('Apollo plugins off: cost limit, operation summary, legacy JSON status, unavailable status and Armor plugins are empty');
