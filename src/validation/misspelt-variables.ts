import damerauLevenshtein from 'damerau-levenshtein';

/**
 * Variables this service does not read but honours or leaves alone on purpose: Node's own, the shell's, the test
 * runner's. A name here is never reported, however close to one of ours.
 */
const STANDARD_VARIABLES: ReadonlySet<string> = new Set([
  'NODE_OPTIONS',
  'NODE_PATH',
  'NODE_DEBUG',
  'NODE_EXTRA_CA_CERTS',
  'NODE_NO_WARNINGS',
  'NODE_TLS_REJECT_UNAUTHORIZED',
  'HOME',
  'HOSTNAME',
  'HOSTTYPE',
  'PATH',
  'PWD',
  'OLDPWD',
  'SHELL',
  'USER',
  'LANG',
  'TERM',
  'TZ',
  'TEST_DATABASE_URL',
]);

/** Prefixes of variables other software reads: OpenTelemetry's SDK takes every OTEL_* name. */
const FOREIGN_PREFIXES = ['OTEL_'] as const;

/** How our variables are spelt; anything else (lower case, npm_*, dotted) is nobody's typo of ours. */
const OUR_SHAPE = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*_?$/;

/**
 * The largest Damerau-Levenshtein distance still read as a typo of `known`: 2 (a dropped letter plus a swapped pair,
 * DATBASE_URLL), but 1 for names under 6 characters, where two edits are half the name (HOME is 2 from HOST).
 */
function typoDistance(known: string): number {
  return known.length < 6 ? 1 : 2;
}

/** One variable that is set, not read, and spelt almost as one that is. */
export interface MisspeltVariable {
  readonly name: string;
  readonly suggestion: string;
  /** `NAME is not a setting; did you mean SUGGESTION?` */
  readonly message: string;
}

/**
 * The set variables of `env` that are not in `known` but within a typo's distance of one of them
 * (Damerau-Levenshtein: insertions, deletions, substitutions and swaps of adjacent letters each count 1), with the
 * nearest known name; standard variables, OTEL_* names and names not shaped like ours are never reported.
 *
 * @param env - the process environment.
 * @param known - the names the service reads (CONFIG_SPEC's keys).
 * @returns one entry per near-miss, in the order of `env`.
 */
export function findMisspeltVariables(env: NodeJS.ProcessEnv, known: readonly string[]): MisspeltVariable[] {
  const ours = new Set(known);
  const found: MisspeltVariable[] = [];
  for (const name of Object.keys(env)) {
    if (ours.has(name) || STANDARD_VARIABLES.has(name) || !OUR_SHAPE.test(name)) continue;
    if (FOREIGN_PREFIXES.some((prefix) => name.startsWith(prefix))) continue;
    let nearest: { name: string; steps: number } | undefined;
    for (const candidate of known) {
      const { steps } = damerauLevenshtein(name, candidate);
      if (steps <= typoDistance(candidate) && (!nearest || steps < nearest.steps)) nearest = { name: candidate, steps };
    }
    if (nearest) found.push({ name, suggestion: nearest.name, message: `${name} is not a setting; did you mean ${nearest.name}?` });
  }
  return found;
}
