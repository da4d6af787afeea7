import { announce, loadBuilt, replaceFunction } from './replace-export';

const costLimit = loadBuilt<{ costLimitPlugin: (...args: never[]) => unknown }>('graphql/cost-limit.plugin');

/** Without the cost-limit plugin alone: an empty plugin, so no price, no extra rate-limit charge, no `extensions.cost`. */
replaceFunction(costLimit, 'costLimitPlugin', 'src/graphql/cost-limit.plugin', () => () => ({}));
announce('cost-limit plugin off: costLimitPlugin() is an empty plugin');
