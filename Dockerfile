# syntax=docker/dockerfile:1

# The production install path of docs/operations.md "Production install", as .ci/run runs it on a
# fresh clone: npm ci, npm run build, npm prune --omit=dev; the runtime stage copies its result.

# ---- build: compile TypeScript into dist/, then drop the devDependencies -----------------
# NODE_ENV is deliberately left unset here: with NODE_ENV=production, `npm ci` would skip
# the devDependencies (typescript, @types/*) that the build needs.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ormconfig.ts ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

# ---- runtime: production dependencies and the compiled output only ----------------------
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The GraphQL playground's own script and style, read at start (src/graphql/playground.ts).
COPY src/graphql/playground ./src/graphql/playground
# data/ is only used by the embedded SQLite file, which production runs on only with EMBEDDED_DATABASE=true
# (docs/configuration.md "Production"); it must be writable
# by the unprivileged user. Everything else stays root-owned and read-only to the app.
RUN mkdir -p /app/data && chown node:node /app/data
USER node
ENV HOST=0.0.0.0 PORT=3000 METRICS_PORT=9464
# 3000: the API; 9464: /metrics for Prometheus (keep it off the public network).
EXPOSE 3000 9464
# Liveness: /healthz answers 200 while the process serves HTTP. No curl in the slim image: use
# Node's global fetch. (docker-compose.yml checks /readyz instead, which also asks the database.)
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))"]
# SIGTERM starts the drain (docs/operations.md "Signals"); give it SHUTDOWN_DRAIN_SECONDS + SHUTDOWN_GRACE_SECONDS.
STOPSIGNAL SIGTERM
# `npm run start:prod`, without npm: the heap cap of src/limits.ts (docs/configuration.md "Heap cap") first in
# NODE_OPTIONS so that a --max-old-space-size in yours comes later and wins; `exec` leaves node as PID 1, to get SIGTERM.
CMD ["sh", "-c", "NODE_OPTIONS=\"$(node dist/src/cli/node-options.cli.js)\" exec node dist/src/main.js"]
