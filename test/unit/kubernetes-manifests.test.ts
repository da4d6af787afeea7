import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler, type IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job, type IJob } from 'kubernetes-models/batch/v1';
import { PodDisruptionBudget, type IPodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Secret, Service, type IConfigMap, type IProbe, type ISecret, type IService } from 'kubernetes-models/v1';
import { CONFIG_SPEC, loadConfig } from '../../src/config';
import { HTTP_LIMITS, TRACING_LIMITS } from '../../src/limits';
import { SURFACE_PATHS } from '../../src/surface-paths';
import { KUBERNETES_DIR, ON_DEMAND_MANIFESTS, readManifestFile, readManifests } from '../helpers/kubernetes-manifests';

/**
 * deploy/kubernetes/ against the Kubernetes API's JSON schemas (kubernetes-models: validators compiled with ajv from
 * the API's OpenAPI document), then against the service itself: every variable is one it reads, the probes are its
 * endpoints, the shutdown timeline fits the pod's grace period, and docs/operations.md quotes the manifests' numbers.
 */
const root = path.join(__dirname, '..', '..');
const { kustomization, all, deployment, job, adminKeyJob, configMap, secret, service, budget, autoscaler, environment } = readManifests();
const manifests: Record<string, unknown>[] = [...all, adminKeyJob as unknown as Record<string, unknown>];
/** The Jobs' containers: the migration's and the on-demand administration key's. */
const jobs = [job, adminKeyJob];

/** The schema of each kind the manifests use, as `apiVersion/kind`; a kind missing here is an error, not a pass. */
const MODELS: Record<string, (manifest: never) => { validate(): void }> = {
  'v1/ConfigMap': (manifest: IConfigMap) => new ConfigMap(manifest),
  'v1/Secret': (manifest: ISecret) => new Secret(manifest),
  'v1/Service': (manifest: IService) => new Service(manifest),
  'apps/v1/Deployment': (manifest: IDeployment) => new Deployment(manifest),
  'batch/v1/Job': (manifest: IJob) => new Job(manifest),
  'policy/v1/PodDisruptionBudget': (manifest: IPodDisruptionBudget) => new PodDisruptionBudget(manifest),
  'autoscaling/v2/HorizontalPodAutoscaler': (manifest: IHorizontalPodAutoscaler) => new HorizontalPodAutoscaler(manifest),
};

/** Throws the schema's errors (e.g. `data/spec/replicas must be integer`) when `manifest` is not a valid object of its kind. */
function validate(manifest: Record<string, unknown>): void {
  const kind = `${String(manifest.apiVersion)}/${String(manifest.kind)}`;
  const model = MODELS[kind];
  if (!model) throw new Error(`no schema for ${kind}`);
  model(manifest as never).validate();
}

const pod = deployment.spec!.template.spec!;
const gateway = pod.containers[0];
const probe = (name: 'startupProbe' | 'livenessProbe' | 'readinessProbe') => gateway[name] as IProbe;
const config = loadConfig(environment(gateway));
const portNamed = (name: string) => gateway.ports!.find((port) => port.name === name)!.containerPort;
const quantity = (value: unknown) => String(value);

describe('deploy/kubernetes against the Kubernetes schemas', () => {
  it.each(manifests.map((manifest) => [`${String(manifest.kind)} ${(manifest.metadata as { name: string }).name}`, manifest]))(
    '%s is valid',
    (_name, manifest) => {
      expect(() => validate(manifest)).not.toThrow();
    },
  );

  it('has every file of the folder in the kustomization, but the example Secret, which would overwrite the real one, and the on-demand Job', () => {
    const files = readdirSync(KUBERNETES_DIR).filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).toEqual(files.filter((file) => !ON_DEMAND_MANIFESTS.includes(file)).sort());
    expect(kustomization.images.map((image) => image.name)).toEqual([gateway.image]);
  });

  /** Each mutation is the kind of slip a hand edit makes; the schema must reject every one. */
  const mutations: [string, (copy: IDeployment) => void, RegExp][] = [
    ['replicas as a word', (copy) => ((copy.spec as unknown as { replicas: string }).replicas = 'two'), /replicas must be integer/],
    [
      'a memory limit that is not a quantity',
      (copy) => (copy.spec!.template.spec!.containers[0].resources!.limits!.memory = '256 MB'),
      /memory must match format "quantity"/,
    ],
    [
      'a probe port that is neither a number nor a port name',
      (copy) => (copy.spec!.template.spec!.containers[0].readinessProbe!.httpGet!.port = { name: 'http' } as never),
      /port must be/,
    ],
    ['no selector', (copy) => delete (copy.spec as Partial<IDeployment['spec']>)!.selector, /must have required property '?selector/],
    ['an API version that has no Deployment', (copy) => ((copy as { apiVersion: string }).apiVersion = 'apps/v1beta1'), /no schema|apiVersion/],
  ];

  it.each(mutations)('rejects a Deployment with %s', (_name, mutate, error) => {
    const copy = structuredClone(deployment);
    mutate(copy);
    expect(() => validate(copy as unknown as Record<string, unknown>)).toThrow(error);
  });
});

describe('deploy/kubernetes against the service', () => {
  const known = new Set(Object.keys(CONFIG_SPEC));

  it('names only variables the service reads (src/config.ts CONFIG_SPEC), commented-out examples included', () => {
    const commented = [...readManifestFile('configmap.yaml').matchAll(/^\s*#\s*([A-Z][A-Z0-9_]*):/gm)].map((match) => match[1]);
    const named = [
      ...Object.keys(configMap.data ?? {}),
      ...commented,
      ...Object.keys(secret.stringData ?? {}),
      ...[gateway, ...jobs.flatMap((each) => each.spec!.template.spec!.containers)].flatMap((container) => (container.env ?? []).map(({ name }) => name)),
    ];
    expect(named.filter((name) => !known.has(name))).toEqual([]);
    expect(commented.length).toBeGreaterThan(0);
  });

  it('reads its settings from the ConfigMap and the Secret it names, the Secret holding the credentials', () => {
    for (const container of [gateway, ...jobs.flatMap((each) => each.spec!.template.spec!.containers)]) {
      expect(container.envFrom).toEqual([{ configMapRef: { name: configMap.metadata!.name } }, { secretRef: { name: secret.metadata!.name } }]);
    }
    expect(Object.keys(secret.stringData ?? {}).sort()).toEqual(['DATABASE_URL', 'REDIS_URL']);
    expect(Object.keys(configMap.data ?? {})).not.toContain('DATABASE_URL');
  });

  it('starts a valid production configuration on MySQL and Redis that leaves migrations to the Job', () => {
    expect(config.nodeEnv).toBe('production');
    expect(config.database.type).toBe('mysql');
    expect(config.redis.url).toBeDefined();
    expect(config.migrateOnStart).toBe(false);
    expect(loadConfig(environment(job.spec!.template.spec!.containers[0])).database.type).toBe('mysql');
    expect(job.spec!.template.spec!.containers[0].command).toEqual(['node', 'dist/src/cli/db.cli.js', 'migrate']);
    expect(readFileSync(path.join(root, 'src', 'cli', 'db.cli.ts'), 'utf8')).toContain("'migrate'");
  });

  it('makes the first administration key on demand: a secret key with both administration scopes that expires within 15 minutes', () => {
    const [container] = adminKeyJob.spec!.template.spec!.containers;
    expect(loadConfig(environment(container)).database.type).toBe('mysql');
    expect(container.command).toEqual([
      'node',
      'dist/src/cli/apikey.cli.js',
      'create',
      'bootstrap-admin',
      '--scope',
      'keys:admin,webhooks:admin',
      '--expires-in',
      '15m',
    ]);
    expect(adminKeyJob.spec!.template.spec!.restartPolicy).toBe('Never');
    // Its log holds the key until the Job is deleted: not past the key's own expiry.
    expect(adminKeyJob.spec!.ttlSecondsAfterFinished).toBeLessThanOrEqual(15 * 60);
  });

  it('probes the real endpoints on the port the server listens on', () => {
    expect(probe('livenessProbe').httpGet).toEqual({ path: SURFACE_PATHS.healthz, port: 'http' });
    expect(probe('readinessProbe').httpGet).toEqual({ path: SURFACE_PATHS.readyz, port: 'http' });
    expect([SURFACE_PATHS.healthz, SURFACE_PATHS.readyz]).toContain(probe('startupProbe').httpGet!.path);
    expect(probe('startupProbe').httpGet!.port).toBe('http');
    expect(portNamed('http')).toBe(config.port);
    expect(config.host).toBe('0.0.0.0');
  });

  it('serves /metrics on the named, annotated port, not through the Service', () => {
    expect(portNamed('metrics')).toBe(config.metrics.port);
    expect(deployment.spec!.template.metadata!.annotations).toMatchObject({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': String(config.metrics.port),
      'prometheus.io/path': '/metrics',
    });
    expect(service.spec!.ports!.map((port) => port.targetPort)).toEqual(['http']);
  });

  it('drains for longer than readiness takes to fail, and ends within the pod grace period', () => {
    const readiness = probe('readinessProbe');
    const { drainSeconds, graceSeconds } = config.shutdown;
    expect(drainSeconds).toBeGreaterThan(readiness.periodSeconds! * readiness.failureThreshold!);
    expect(graceSeconds).toBeGreaterThanOrEqual(HTTP_LIMITS.requestTimeoutMs / 1000);
    // After the grace period the buffered spans get up to TRACING_LIMITS.shutdownFlushMs, then the pools close.
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(drainSeconds + graceSeconds + TRACING_LIMITS.shutdownFlushMs / 1000);
    expect(gateway.lifecycle?.preStop).toBeUndefined();
  });

  it('runs as a non-root user on a read-only root file system, without privileges', () => {
    for (const spec of [pod, ...jobs.map((each) => each.spec!.template.spec!)]) {
      expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(spec.securityContext!.runAsUser).toBeGreaterThan(0);
      expect(spec.automountServiceAccountToken).toBe(false);
      for (const container of spec.containers) {
        expect(container.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
      }
    }
  });

  it('ties the Service, the budget and the autoscaler to the pods, and leaves the replica count to the autoscaler', () => {
    const labels = deployment.spec!.template.metadata!.labels!;
    expect(deployment.spec!.selector.matchLabels).toEqual(labels);
    expect(service.spec!.selector).toEqual(labels);
    expect(budget.spec!.selector!.matchLabels).toEqual(labels);
    expect(autoscaler.spec!.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata!.name });
    expect(autoscaler.spec!.metrics!.map((metric) => metric.resource?.name)).toEqual(['cpu']);
    expect(autoscaler.spec!.minReplicas).toBeGreaterThanOrEqual(2);
    expect(deployment.spec!.replicas).toBeUndefined();
    expect(gateway.resources!.requests!.cpu).toBeDefined();
  });

  it('is what docs/operations.md "Kubernetes" says: the resources, the timeline and the probes', () => {
    const section = readFileSync(path.join(root, 'docs', 'operations.md'), 'utf8')
      .split('\n## Kubernetes\n')[1]
      ?.split('\n## ')[0];
    expect(section).toBeDefined();
    const { requests, limits } = gateway.resources!;
    const readiness = probe('readinessProbe');
    const quoted = [
      `memory request \`${quantity(requests!.memory)}\``,
      `memory limit \`${quantity(limits!.memory)}\``,
      `CPU request \`${quantity(requests!.cpu)}\``,
      `CPU limit \`${quantity(limits!.cpu)}\``,
      `\`SHUTDOWN_DRAIN_SECONDS=${config.shutdown.drainSeconds}\``,
      `\`SHUTDOWN_GRACE_SECONDS=${config.shutdown.graceSeconds}\``,
      `\`terminationGracePeriodSeconds: ${pod.terminationGracePeriodSeconds}\``,
      `every ${readiness.periodSeconds} s`,
      `${readiness.failureThreshold} failures`,
      `\`averageUtilization: ${autoscaler.spec!.metrics![0].resource!.target.averageUtilization}\``,
      `${autoscaler.spec!.minReplicas} to ${autoscaler.spec!.maxReplicas} replicas`,
    ];
    expect(quoted.filter((text) => !section.includes(text))).toEqual([]);
  });
});
