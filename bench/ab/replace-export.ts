// As dist/src/main.js does first: a preload loads decorated classes before main.js runs.
import 'reflect-metadata';
import { createRequire } from 'node:module';
import path from 'node:path';

/** What a preload writes to standard error, so that a probe can find its lines among the service's. */
export const AB_MARK = '[bench A/B]';

/**
 * Writes one line `[bench A/B] <text>` to standard error, synchronously (fd 2 is a pipe to the bench).
 *
 * @param text - one line, no newline.
 */
export function announce(text: string): void {
  process.stderr.write(`${AB_MARK} ${text}\n`);
}

/**
 * Wraps `fn` so that its first call announces `text` ({@link announce}): what a probe looks for to
 * know that the replacement, not the service's own code, runs in the process. Later calls cost one
 * boolean test.
 */
export function announcingFirstCall<A extends unknown[], R>(text: string, fn: (...args: A) => R): (...args: A) => R {
  let announced = false;
  return (...args: A) => {
    if (!announced) {
      announced = true;
      announce(text);
    }
    return fn(...args);
  };
}

/**
 * Replaces the function `owner[key]` of a loaded module (its CommonJS `exports`, or a class's
 * prototype) by `make(original)`, before dist/src/main.js loads the modules that call it. tsc's
 * CommonJS output reads an import at each call (`(0, module_1.name)(…)`), so every caller sees the
 * replacement.
 *
 * @param owner - the module's exports (`import * as module`), or an object such as a prototype.
 * @param key - the name of the function to replace.
 * @param where - how the error names the owner, e.g. `src/http/security-headers`.
 * @param make - given the original function, returns its replacement.
 * @throws when `owner[key]` is not a function or is not a plain writable property (e.g. a
 *   re-export's getter): a rename in src/ must break the A/B run, not let it measure nothing.
 */
export function replaceFunction<K extends string, T extends { [P in K]: (...args: never[]) => unknown }>(
  owner: T,
  key: K,
  where: string,
  make: (original: T[K]) => T[K],
): void {
  const original = owner[key] as unknown;
  if (typeof original !== 'function') throw new Error(`${AB_MARK} ${where} has no function ${key} (renamed?): the preload cannot switch it off.`);
  const descriptor = Object.getOwnPropertyDescriptor(owner, key);
  if (!descriptor || !('value' in descriptor) || !descriptor.writable) {
    throw new Error(`${AB_MARK} ${where}.${key} is not a plain writable property: the preload cannot replace it.`);
  }
  const replacement = make(original as T[K]);
  (owner as Record<K, unknown>)[key] = replacement;
  if (owner[key] !== replacement) throw new Error(`${AB_MARK} ${where}.${key} did not take its replacement.`);
}

/**
 * Loads a built module of the service, dist/src/<fromSrc>.js, by path at run time: the same module
 * object the service's own require gets. For a module that does not type-check in the bench's
 * program: src/graphql/cost-limit.plugin.ts (its errors carry Apollo's `http.headers` Map, where
 * graphql-yoga, a peer's, declares a Record); the request log's and the operation summary's preloads
 * load theirs (src/http/request-observer.hook.ts, src/graphql/operation-summary.plugin.ts) the same way.
 *
 * @param fromSrc - the path under src/ without extension, e.g. `graphql/cost-limit.plugin`.
 * @returns its exports, typed as the caller states them.
 * @throws when there is no such built module (run `npx tsc -b . bench`).
 */
export function loadBuilt<T>(fromSrc: string): T {
  return createRequire(__filename)(path.resolve(__dirname, '..', '..', 'src', `${fromSrc}.js`)) as T;
}
