/**
 * Every per-request feature off at once: each feature's own preload, loaded in the order of the
 * variants' table (bench/README.md "Per-request cost"). What is left is the service's skeleton:
 * Fastify with its routes and the guard's key check, Apollo Server with graphql-jit, TypeORM and
 * mysql2; the main bench runs it as `--service-variant all-features` to measure that floor beside B1c.
 */
import './request-log.preload';
import './metrics.preload';
import './rate-limit.preload';
import './security-headers.preload';
import './json-newline.preload';
import './validation.preload';
import './database-deadline.preload';
import './cursor-hash.preload';
import './apollo-plugins.preload';
import './apollo-fastify.preload';
