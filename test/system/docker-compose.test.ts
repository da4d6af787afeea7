import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { HEAP_CAP_NODE_OPTION, HTTP_LIMITS, PET_FEED_LIMITS, SUBSCRIPTION_LIMITS } from '../../src/limits';

const ROOT = path.resolve(__dirname, '..', '..');

// ---------------------------------------------------------------------------------------
// docker-compose.yml
// ---------------------------------------------------------------------------------------

interface ComposeService {
  image?: string;
  build?: { context?: string };
  environment?: Record<string, string>;
  /** Compose's short form, `host:published:target/protocol`. */
  ports?: string[];
  /** Compose's short form, `source:target:mode`. */
  volumes?: string[];
  depends_on?: Record<string, { condition?: string }>;
  healthcheck?: { test?: string[] };
  expose?: string[];
  deploy?: { replicas?: number };
  stop_grace_period?: string;
}

interface ComposeFile {
  version?: unknown;
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

/**
 * docker-compose.yml as Compose itself reads it with `env` (`docker-compose config`: variables interpolated, every
 * entry in one form), or the error it stops with. Debian's `docker-compose` parses offline; no Docker engine is needed.
 */
async function composeConfig(env: Record<string, string>): Promise<{ config?: ComposeFile; error?: string }> {
  const { MYSQL_PASSWORD: _unset, ...inherited } = process.env;
  try {
    const { stdout } = await promisify(execFile)('docker-compose', ['--file', 'docker-compose.yml', '--project-directory', ROOT, 'config'], {
      cwd: ROOT,
      env: { ...inherited, ...env },
    });
    return { config: parse(stdout) as ComposeFile };
  } catch (error) {
    const { code, stderr } = error as { code?: string | number; stderr?: string };
    if (code === 'ENOENT') throw new Error("The compose tests need Debian's docker-compose (apt-get install docker-compose) on the PATH.", { cause: error });
    return { error: stderr ?? String(error) };
  }
}

/** The healthcheck's command, or [] when there is none. */
function healthcheckCommand(service: ComposeService): string[] {
  return service.healthcheck?.test?.slice(1) ?? [];
}

/** Published → container port pairs of Compose's short form (`127.0.0.1:3000:80/tcp`). */
function portsOf(service: ComposeService): Array<{ host: string; published: string; target: string }> {
  return (service.ports ?? []).map((entry) => {
    const parts = entry.replace(/\/(tcp|udp)$/, '').split(':');
    return {
      host: parts.length > 2 ? parts.slice(0, -2).join(':') : '',
      published: parts.length > 1 ? parts[parts.length - 2] : '',
      target: parts[parts.length - 1],
    };
  });
}

/** The named volumes a service mounts (bind mounts, whose source is a path, excluded). */
function namedVolumesOf(service: ComposeService): Array<{ source: string; target: string }> {
  return (service.volumes ?? []).flatMap((entry) => {
    const [source, target] = entry.split(':');
    return target !== undefined && !source.startsWith('/') ? [{ source, target }] : [];
  });
}

/** An nginx time (`4s`, `500ms`, `1m30s`, a bare number of seconds), in milliseconds. */
function nginxMilliseconds(time: string): number {
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  const parts = [...time.matchAll(/(\d+)(ms|s|m|h|d)?/g)];
  expect(parts.map((part) => part[0]).join('')).toBe(time); // nothing left unread
  return parts.reduce((sum, [, n, unit]) => sum + Number(n) * units[unit ?? 's'], 0);
}

describe('docker-compose.yml', () => {
  const PASSWORD = 'a1b2c3';
  const raw = parse(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8')) as ComposeFile;
  let compose: ComposeFile;
  let services: Record<string, ComposeService>;
  let mysql: ComposeService, app: ComposeService, redis: ComposeService, proxy: ComposeService;
  let mysqlEnv: Record<string, string>, appEnv: Record<string, string>;
  beforeAll(async () => {
    const { config, error } = await composeConfig({ MYSQL_PASSWORD: PASSWORD });
    if (!config) throw new Error(`docker-compose config refused the file: ${error}`);
    compose = config;
    services = compose.services;
    ({ mysql = {}, app = {}, redis = {}, proxy = {} } = services);
    mysqlEnv = mysql.environment ?? {};
    appEnv = app.environment ?? {};
  });

  const dependencies = (service: ComposeService) => service.depends_on ?? {};
  /** Compose durations such as 30s, 1m30s, in seconds. */
  const seconds = (duration = '10s') =>
    [...duration.matchAll(/(\d+)(h|m|s)/g)].reduce((sum, [, n, unit]) => sum + Number(n) * { h: 3600, m: 60, s: 1 }[unit as 'h' | 'm' | 's'], 0);
  /** The nginx configuration the proxy mounts, comments dropped. */
  const nginxConf = () => {
    const mount = (proxy.volumes ?? []).find((volume) => volume.endsWith(':/etc/nginx/conf.d/default.conf:ro'));
    expect(mount).toBeDefined();
    return readFileSync(mount!.split(':')[0], 'utf8').replace(/#.*$/gm, '');
  };

  test('when read, then it declares mysql, redis, the app and its proxy, and no obsolete version key', () => {
    expect(Object.keys(services).sort()).toEqual(['app', 'mysql', 'proxy', 'redis']);
    expect(raw).not.toHaveProperty('version');
  });

  test('when the app is read, then it runs as two replicas that publish no host port (the proxy does)', () => {
    expect(app.deploy?.replicas).toBe(2);
    expect(app.ports ?? []).toEqual([]);
    expect(app.expose ?? []).toEqual(expect.arrayContaining([appEnv.PORT, appEnv.METRICS_PORT]));
  });

  test('when the redis service is read, then the app shares its rate-limit counters there and waits for it to be healthy', () => {
    expect(redis.image).toMatch(/^redis:\d/);
    expect(healthcheckCommand(redis).join(' ')).toMatch(/redis-cli ping/);
    const url = new URL(appEnv.REDIS_URL ?? '');
    expect([url.protocol, url.hostname, url.port]).toEqual(['redis:', 'redis', '6379']);
    expect(dependencies(app).redis?.condition).toBe('service_healthy');
  });

  test('when the proxy is read, then it is the official nginx image, publishes the port on loopback only and forwards to every app replica', () => {
    expect(proxy.image).toMatch(/^nginx:1\.(2[7-9]|[3-9]\d)/);
    expect(portsOf(proxy)).toEqual([{ host: '127.0.0.1', published: appEnv.PORT, target: '80' }]);
    expect(dependencies(proxy).app?.condition).toBe('service_healthy');
    const conf = nginxConf();
    expect(conf).toMatch(new RegExp(`server app:${appEnv.PORT} resolve`));
    expect(conf).toMatch(/resolver 127\.0\.0\.11/);
    expect(conf).toMatch(/proxy_pass http:\/\/petstore;/);
    expect(conf).toMatch(/proxy_set_header X-Forwarded-For/);
    expect(conf).toMatch(/proxy_set_header X-Request-Id/);
    expect(appEnv.TRUST_PROXY).toBe('1');
  });

  test('when nginx keeps idle connections to the app, then it drops them before the app closes them (else a POST may get a 502)', () => {
    const conf = nginxConf();
    const upstream = /upstream\s+petstore\s*\{([^}]*)\}/.exec(conf)?.[1];
    expect(upstream).toBeDefined();
    expect(upstream).toMatch(/^\s*keepalive\s+\d+;/m); // connections are kept at all
    // nginx's default, when the upstream block does not set it, is 60 s.
    const kept = /^\s*keepalive_timeout\s+([^;\s]+);/m.exec(upstream!)?.[1] ?? '60s';
    expect(nginxMilliseconds(kept)).toBeLessThan(HTTP_LIMITS.keepAliveTimeoutMs);
  });

  test('when a WebSocket (subscriptions) goes through nginx, then the upgrade is passed on and the keep-alive pings come before its read timeout', () => {
    const conf = nginxConf();
    expect(conf).toMatch(/proxy_set_header Upgrade \$http_upgrade;/);
    const connection = /proxy_set_header Connection (\$\w+);/.exec(conf)?.[1];
    expect(connection).toBeDefined();
    // Upgrades say `upgrade`; every other request an empty Connection (pooled connections).
    expect(conf).toMatch(new RegExp(`map \\$http_upgrade \\${connection}\\s*\\{\\s*default upgrade;\\s*""\\s*"";\\s*\\}`));
    const readTimeout = /proxy_read_timeout\s+([^;\s]+);/.exec(conf)?.[1] ?? '60s';
    expect(SUBSCRIPTION_LIMITS.keepAliveMs).toBeLessThan(nginxMilliseconds(readTimeout));
  });

  test('when an event stream (GET /v1/events, SSE) goes through nginx, then its heartbeats come before the read timeout', () => {
    const readTimeout = /proxy_read_timeout\s+([^;\s]+);/.exec(nginxConf())?.[1] ?? '60s';
    expect(PET_FEED_LIMITS.heartbeatMs).toBeLessThan(nginxMilliseconds(readTimeout));
  });

  test('when the app stops, then Docker waits longer than its drain and grace period', () => {
    const needed = Number(appEnv.SHUTDOWN_DRAIN_SECONDS ?? 0) + Number(appEnv.SHUTDOWN_GRACE_SECONDS ?? 10);
    expect(seconds(app.stop_grace_period)).toBeGreaterThan(needed);
  });

  test('when the mysql service is read, then its image is mysql:8.4', () => {
    expect(mysql.image).toMatch(/^mysql:8\.4(\b|$)/);
  });

  test('when the mysql service is read, then it creates the database, user and password the app needs', () => {
    for (const key of ['MYSQL_DATABASE', 'MYSQL_USER', 'MYSQL_PASSWORD']) {
      expect({ key, value: mysqlEnv[key] ?? '' }).toEqual({ key, value: expect.stringMatching(/.+/) });
    }
  });

  test('when the file is read, then it holds no password: the app one comes from the environment or .env (required), the root one is random', async () => {
    expect(raw.services.mysql.environment?.MYSQL_PASSWORD).toMatch(/^\$\{MYSQL_PASSWORD:\?.*\.env.*\}$/);
    expect(mysqlEnv.MYSQL_PASSWORD).toBe(PASSWORD);
    const { config, error } = await composeConfig({});
    expect(config).toBeUndefined();
    expect(error).toMatch(/set MYSQL_PASSWORD in \.env/);
    expect(mysqlEnv.MYSQL_RANDOM_ROOT_PASSWORD).toBe('yes');
    expect(mysqlEnv).not.toHaveProperty('MYSQL_ROOT_PASSWORD');
    expect(readFileSync(path.join(ROOT, '.gitignore'), 'utf8').split('\n')).toContain('.env');
  });

  test('when the mysql service is read, then it has a healthcheck that pings the server', () => {
    expect(healthcheckCommand(mysql).join(' ')).toMatch(/mysqladmin ping|mysql .*SELECT 1/);
  });

  test('when the mysql service is read, then /var/lib/mysql is a named volume declared at the top level', () => {
    const dataVolume = namedVolumesOf(mysql).find((volume) => volume.target === '/var/lib/mysql');
    expect(dataVolume).toBeDefined();
    expect(Object.keys(compose.volumes ?? {})).toContain(dataVolume?.source);
  });

  test('when the app service is read, then it is built from the repository root', () => {
    expect(app.build?.context).toBe(ROOT);
  });

  test('when the app DATABASE_URL is parsed, then it is a mysql:// URL to the mysql service with its credentials and database', () => {
    const url = new URL(appEnv.DATABASE_URL ?? '');
    expect(url.protocol).toBe('mysql:');
    expect(Object.keys(services)).toContain(url.hostname);
    expect(url.hostname).toBe('mysql');
    expect({
      user: decodeURIComponent(url.username),
      password: decodeURIComponent(url.password),
      database: decodeURIComponent(url.pathname.slice(1)),
    }).toEqual({ user: mysqlEnv.MYSQL_USER, password: mysqlEnv.MYSQL_PASSWORD, database: mysqlEnv.MYSQL_DATABASE });
  });

  test('when the app environment is read, then it runs in production, listening on all interfaces', () => {
    expect(appEnv.NODE_ENV).toBe('production');
    expect(appEnv.HOST).toBe('0.0.0.0');
    expect(appEnv.PORT).toMatch(/^[1-9][0-9]*$/);
  });

  test('when the app dependencies are read, then it waits for mysql to be healthy', () => {
    expect(dependencies(app).mysql?.condition).toBe('service_healthy');
  });

  test('when the app service is read, then its healthcheck asks /readyz on its HTTP port', () => {
    expect(healthcheckCommand(app).join(' ')).toMatch(/fetch\(.*127\.0\.0\.1:.*\/readyz/);
  });
});

// ---------------------------------------------------------------------------------------
// Dockerfile
// ---------------------------------------------------------------------------------------

interface Instruction {
  keyword: string;
  args: string;
}

/** Instructions in order: comments dropped, `\` line continuations joined. */
function instructionsOf(text: string): Instruction[] {
  const logical = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\r?\n/g, ' ')
    .split('\n');
  return logical
    .map((line) => line.trim())
    .filter((line) => line.length > 0)
    .map((line) => {
      const [keyword, ...rest] = line.split(/\s+/);
      return { keyword: keyword.toUpperCase(), args: rest.join(' ') };
    });
}

/** The stages: each starts at a FROM. */
function stagesOf(instructions: Instruction[]): Instruction[][] {
  const stages: Instruction[][] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') stages.push([]);
    stages[stages.length - 1]?.push(instruction);
  }
  return stages;
}

/** `ENV A=1 B=2` and the legacy `ENV A 1` form, as a map. */
function envOf(stage: Instruction[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of stage.filter((i) => i.keyword === 'ENV')) {
    if (args.includes('=')) {
      for (const match of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g)) env[match[1]] = match[2].replace(/^"|"$/g, '');
    } else {
      const [key, ...value] = args.split(/\s+/);
      env[key] = value.join(' ');
    }
  }
  return env;
}

describe('Dockerfile', () => {
  const instructions = instructionsOf(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'));
  const stages = stagesOf(instructions);
  const final = stages[stages.length - 1] ?? [];
  const last = (keyword: string) => [...final].reverse().find((i) => i.keyword === keyword);

  test('when read, then it is a multi-stage build with at least two FROM lines', () => {
    expect(instructions.filter((i) => i.keyword === 'FROM').length).toBeGreaterThanOrEqual(2);
  });

  test('when the final stage is read, then it copies the compiled output from an earlier stage', () => {
    expect(final.filter((i) => i.keyword === 'COPY').map((i) => i.args)).toContainEqual(expect.stringMatching(/--from=\S+\s+\S*dist\b/));
  });

  test('when the final stage is read, then it runs as a user that is not root', () => {
    const user = last('USER');
    expect(user).toBeDefined();
    expect(user?.args.split(':')[0]).not.toMatch(/^(root|0)$/);
  });

  test('when the final stage is read, then NODE_ENV=production is set', () => {
    expect(envOf(final).NODE_ENV).toBe('production');
  });

  test('when the build stage is read, then NODE_ENV=production is not set, so npm ci installs the dev dependencies', () => {
    const build = stages[0] ?? [];
    expect(build.some((i) => i.keyword === 'RUN' && /npm (run )?build/.test(i.args))).toBe(true);
    expect(envOf(build).NODE_ENV).not.toBe('production');
  });

  test('when the stages are read, then both run on Node 24 LTS, the line package.json "engines" names beside Node 20', () => {
    expect(stages.map((stage) => stage[0].args.split(/\s+/)[0])).toEqual(['node:24-bookworm-slim', 'node:24-bookworm-slim']);
    const { engines } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(engines.node).toContain('^24.');
  });

  test('when the build stage is read, then it takes the production install path: npm ci, npm run build, npm prune --omit=dev', () => {
    const runs = (stages[0] ?? []).filter((i) => i.keyword === 'RUN').map((i) => i.args);
    const order = ['npm ci', 'npm run build', 'npm prune --omit=dev'].map((command) => runs.join(' && ').indexOf(command));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });

  test('when the final stage is read, then it copies the pruned node_modules of the build stage and installs nothing itself', () => {
    expect(final.filter((i) => i.keyword === 'COPY').map((i) => i.args)).toContainEqual(expect.stringMatching(/--from=\S+\s+\S*node_modules\b/));
    expect(final.filter((i) => i.keyword === 'RUN').map((i) => i.args)).not.toContainEqual(expect.stringMatching(/\bnpm (ci|install|i)\b/));
  });

  test('when the final stage is read, then it has a HEALTHCHECK on /healthz', () => {
    const healthcheck = last('HEALTHCHECK');
    expect(healthcheck?.args).toMatch(/\bCMD\b/);
    expect(healthcheck?.args).not.toMatch(/^NONE\b/i);
    expect(healthcheck?.args).toMatch(/\/healthz/);
  });

  test('when the CMD is read, then it runs dist/src/main.js, the compiled src/main.ts, with exec so that node is PID 1', () => {
    const argv = launchOf(dockerCommand()).split(/\s+/);
    expect(argv).toEqual(['exec', 'node', 'dist/src/main.js']);
    const { compilerOptions } = JSON.parse(readFileSync(path.join(ROOT, 'tsconfig.json'), 'utf8')) as {
      compilerOptions: { outDir: string; rootDir: string };
    };
    const source = path.join(compilerOptions.rootDir, path.relative(compilerOptions.outDir, argv[2])).replace(/\.js$/, '.ts');
    expect(path.normalize(source)).toBe(path.normalize('src/main.ts'));
  });
});

// ---------------------------------------------------------------------------------------
// The heap cap: `npm start` and the Dockerfile
// ---------------------------------------------------------------------------------------

/** The shell command of the Dockerfile's final CMD (`sh -c "…"`, exec form). */
function dockerCommand(): string {
  const cmd = instructionsOf(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'))
    .filter((i) => i.keyword === 'CMD')
    .at(-1);
  const argv = JSON.parse(cmd?.args ?? '[]') as string[];
  expect(argv.slice(0, 2)).toEqual(['sh', '-c']);
  return argv[2];
}

/** The shell command of package.json's `start:prod` script, which `start` runs after its build step. */
function startCommand(): string {
  const { scripts } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  expect(scripts.start).toBe(`tsc -b && ${scripts['start:prod']}`);
  return scripts['start:prod'];
}

/** What a launch command sets NODE_OPTIONS to, and the command it runs with it. */
function launchOf(command: string): string {
  const match = /^NODE_OPTIONS="([^"]*)" (.+)$/.exec(command);
  expect(match).not.toBeNull();
  return match![2];
}

/** V8's heap limit (bytes) of the process a launch command starts, with `nodeOptions` as the caller's NODE_OPTIONS. */
async function heapLimitUnder(command: string, nodeOptions: string | undefined): Promise<number> {
  const probe = command.replace(/node dist\/src\/main\.js$/, `node -p 'require("v8").getHeapStatistics().heap_size_limit'`);
  expect(probe).not.toBe(command);
  const { NODE_OPTIONS: _ignored, ...env } = process.env;
  const { stdout } = await promisify(execFile)('sh', ['-c', probe], { env: nodeOptions === undefined ? env : { ...env, NODE_OPTIONS: nodeOptions } });
  return Number(stdout.trim());
}

/** V8's heap limit (bytes) of `node` started with `options` on its command line. */
async function heapLimitWith(options: string[]): Promise<number> {
  const { stdout } = await promisify(execFile)(process.execPath, [...options, '-p', 'require("v8").getHeapStatistics().heap_size_limit']);
  return Number(stdout.trim());
}

describe('the heap cap (docs/configuration.md "Heap cap")', () => {
  test('when the start scripts and the Dockerfile are read, then all launch the same way, with the NODE_OPTIONS of node-options.cli.js', () => {
    expect(dockerCommand()).toBe(startCommand());
    expect(startCommand()).toBe('NODE_OPTIONS="$(node dist/src/cli/node-options.cli.js)" exec node dist/src/main.js');
  });

  test.each([
    ['npm run start:prod (npm start after its build)', startCommand],
    ['the Docker image', dockerCommand],
  ])('when %s runs with no NODE_OPTIONS, then node gets the cap; with a --max-old-space-size in NODE_OPTIONS, that one', async (_name, command) => {
    const capped = await heapLimitWith([HEAP_CAP_NODE_OPTION]);
    const raised = await heapLimitWith(['--max-old-space-size=512']);
    expect(capped).toBeLessThan(raised);
    expect(await heapLimitUnder(command(), undefined)).toBe(capped);
    // Another option of the operator's keeps the cap; their own cap wins over it.
    expect(await heapLimitUnder(command(), '--enable-source-maps')).toBe(capped);
    expect(await heapLimitUnder(command(), '--max-old-space-size=512')).toBe(raised);
  });
});
