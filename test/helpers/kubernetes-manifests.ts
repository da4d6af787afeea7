import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { IDeployment } from 'kubernetes-models/apps/v1';
import type { IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import type { IJob } from 'kubernetes-models/batch/v1';
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1';
import type { IConfigMap, IContainer, ISecret, IService } from 'kubernetes-models/v1';

/** deploy/kubernetes/ (docs/operations.md "Kubernetes"). */
export const KUBERNETES_DIR = path.join(__dirname, '..', '..', 'deploy', 'kubernetes');

/** A file of deploy/kubernetes/, as text. */
export const readManifestFile = (file: string) => readFileSync(path.join(KUBERNETES_DIR, file), 'utf8');

/**
 * Every document of a YAML file of deploy/kubernetes/, parsed.
 * @throws Error naming the file on a YAML error.
 */
export function manifestDocuments(file: string): Record<string, unknown>[] {
  return parseAllDocuments(readManifestFile(file)).map((document) => {
    if (document.errors.length > 0) throw new Error(`${file}: ${document.errors.map(String).join('; ')}`);
    return document.toJS() as Record<string, unknown>;
  });
}

/** The files of deploy/kubernetes/ that are not kustomization resources: applying them would overwrite a Secret, or run a Job that is meant to run on demand. */
export const ON_DEMAND_MANIFESTS = Object.freeze(['secret.example.yaml', 'admin-key-job.yaml']);

/**
 * The kustomization's resources and the example Secret, parsed, with the one object of each kind picked out, and the
 * on-demand administration key Job (`adminKeyJob`).
 * @throws Error when a kind is there other than once.
 */
export function readManifests() {
  const kustomization = manifestDocuments('kustomization.yaml')[0] as { resources: string[]; images: { name: string }[] };
  const all = [...kustomization.resources, 'secret.example.yaml'].flatMap((file) => manifestDocuments(file));
  const only = <T>(kind: string) => {
    const found = all.filter((manifest) => manifest.kind === kind);
    if (found.length !== 1) throw new Error(`${found.length} ${kind} manifests, not one`);
    return found[0] as T;
  };
  const configMap = only<IConfigMap>('ConfigMap');
  const secret = only<ISecret>('Secret');
  return {
    kustomization,
    all,
    deployment: only<IDeployment>('Deployment'),
    job: only<IJob>('Job'),
    configMap,
    secret,
    service: only<IService>('Service'),
    budget: only<IPodDisruptionBudget>('PodDisruptionBudget'),
    autoscaler: only<IHorizontalPodAutoscaler>('HorizontalPodAutoscaler'),
    adminKeyJob: manifestDocuments('admin-key-job.yaml')[0] as unknown as IJob,
    /** A container's variables (ConfigMap, the example Secret, then its own env, which wins), as the service sees them. */
    environment: (container: IContainer): Record<string, string> => ({
      ...configMap.data,
      ...secret.stringData,
      ...Object.fromEntries((container.env ?? []).map(({ name, value }) => [name, value ?? ''])),
    }),
  };
}
