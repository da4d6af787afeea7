import type { FastifyInstance } from 'fastify';
import * as newline from '../../src/http/json-newline.hook';
import { announce, replaceFunction } from './replace-export';

/** CPU time the control spends per response on purpose, nanoseconds: what the A/B must find. */
export const BURN_NS = 20_000n;

/** Keeps the CPU busy for {@link BURN_NS} of wall time (a core to itself: the same in CPU time). */
function burn(): void {
  const until = process.hrtime.bigint() + BURN_NS;
  while (process.hrtime.bigint() < until);
}

/**
 * The A/B's resolution check: the newline hook as it is, which first spins 20 µs in every response's
 * onSend, inside the hook's own function so that no hook is added.
 */
replaceFunction(newline, 'endJsonWithNewline', 'src/http/json-newline.hook', (original) => (app: FastifyInstance) => {
  const addHook = app.addHook.bind(app) as (name: string, hook: (...args: unknown[]) => unknown) => FastifyInstance;
  original(
    new Proxy(app, {
      get: (target, key, receiver) =>
        key === 'addHook'
          ? (name: string, hook: (...args: unknown[]) => unknown) =>
              addHook(name, function (this: unknown, ...args: unknown[]) {
                burn();
                return hook.apply(this, args);
              })
          : (Reflect.get(target, key, receiver) as unknown),
    }),
  );
});
announce(`control: endJsonWithNewline() hooks spin ${Number(BURN_NS) / 1000} µs per response`);
