/**
 * deploy/k8s, checked offline: every overlay renders with `kubectl kustomize`, every object is valid for its
 * kind (kubernetes-models), and what the objects say agrees with the apps: ports, probe routes, environment
 * names (read from loadConfig, not a list kept here), migrations as a Job, storage and replica rules.
 */
import { execFile } from 'node:child_process';
import * as models from 'kubernetes-models';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '@interns/contracts';
import { APPS, configEnvNames, healthRoutes, portVariable } from './app-facts';

/** The parts of Kubernetes objects this test reads. */
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  spec?: Record<string, unknown>;
}
interface Probe {
  httpGet?: { path: string; port: string | number };
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean; runAsNonRoot?: boolean };
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: {
    containers: Container[];
    terminationGracePeriodSeconds?: number;
    restartPolicy?: string;
    securityContext?: { runAsNonRoot?: boolean };
    topologySpreadConstraints?: { topologyKey: string; whenUnsatisfiable: string; labelSelector: { matchLabels: Record<string, string> } }[];
    volumes?: { name: string; persistentVolumeClaim?: { claimName: string } }[];
  };
}

const OVERLAYS = ['dev', 'prod'] as const;
const LABEL_KEYS = ['app.kubernetes.io/name', 'app.kubernetes.io/part-of', 'app.kubernetes.io/component'];
/** The gateway's own shutdown grace (apps/gateway/src/main.ts); every app gets at least that after preStop. */
const GATEWAY_SHUTDOWN_GRACE_SECONDS = 15;

function kubectlKustomize(dir: string): Promise<string> {
  return new Promise((done, fail) => {
    execFile('kubectl', ['kustomize', dir], { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT') {
        fail(new Error('kubectl is not installed: `apt-get install -y kubectl` (.ci/run does this when it is missing)'));
      } else if (error) {
        fail(new Error(`kubectl kustomize ${dir} failed: ${error.message}\n${stderr}`));
      } else {
        done(stdout);
      }
    });
  });
}

async function render(overlay: string): Promise<K8sObject[]> {
  const documents = parseAllDocuments(await kubectlKustomize(`deploy/k8s/overlays/${overlay}`));
  return documents.map((document) => {
    if (document.errors.length > 0) throw new Error(`unparsable output of ${overlay}: ${document.errors[0].message}`);
    return document.toJS() as K8sObject;
  });
}

/** kubernetes-models' class for `apiVersion`/`kind`: `apps/v1` → models.apps.v1, `v1` → models.v1. */
function modelFor(apiVersion: string, kind: string): (new (data: unknown) => { validate(): void }) | undefined {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  const groupKey = group === '' ? null : group.replace(/\.([a-z])/g, (_match, letter: string) => letter.toUpperCase());
  const byGroup = models as unknown as Record<string, Record<string, Record<string, unknown>>>;
  const namespace = groupKey === null ? (byGroup.v1 as unknown as Record<string, unknown>) : byGroup[groupKey]?.[version];
  return namespace?.[kind] as (new (data: unknown) => { validate(): void }) | undefined;
}

function matches(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  return selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([key, value]) => labels[key] === value);
}

describe.each(OVERLAYS)('kustomize overlay %s', (overlay) => {
  let objects: K8sObject[];
  const routes = healthRoutes();
  const known = configEnvNames();

  const find = (kind: string, name: string) => objects.find((object) => object.kind === kind && object.metadata.name === name);
  const ofKind = (kind: string) => objects.filter((object) => object.kind === kind);
  const podTemplate = (object: K8sObject) => (object.spec as { template: PodTemplate }).template;
  const appContainer = (app: string) => {
    const deployment = find('Deployment', app);
    const container = deployment && podTemplate(deployment).spec.containers.find((candidate) => candidate.name === app);
    if (!container) throw new Error(`${overlay}: no Deployment ${app} with a container ${app}`);
    return container;
  };
  /** The ConfigMap and Secret a container takes its environment from (the Secret is absent when provided out of band). */
  const environmentOf = (container: Container) => {
    const configMapName = container.envFrom?.find((source) => source.configMapRef)?.configMapRef?.name;
    const secretName = container.envFrom?.find((source) => source.secretRef)?.secretRef?.name;
    const configMap = configMapName === undefined ? undefined : find('ConfigMap', configMapName);
    const secret = secretName === undefined ? undefined : find('Secret', secretName);
    const secretData = Object.fromEntries(
      Object.entries(secret?.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]),
    );
    return { configMapName, secretName, configMap, secret, config: configMap?.data ?? {}, secretData };
  };

  beforeAll(async () => {
    objects = await render(overlay);
  });

  it('renders objects that are valid for their kind', () => {
    expect(objects.length).toBeGreaterThan(0);
    for (const object of objects) {
      const Model = modelFor(object.apiVersion, object.kind);
      if (!Model) throw new Error(`${overlay}: no kubernetes-models class for ${object.apiVersion} ${object.kind}`);
      expect(() => new Model(object).validate()).not.toThrow();
    }
  });

  it('labels every workload, its pods and its companions with name, part-of and component', () => {
    for (const object of objects.filter((candidate) => !['ConfigMap', 'Secret', 'Namespace'].includes(candidate.kind))) {
      const where = `${object.kind}/${object.metadata.name}`;
      for (const key of LABEL_KEYS) expect({ where, key, set: Boolean(object.metadata.labels?.[key]) }).toEqual({ where, key, set: true });
      const template = (object.spec as { template?: PodTemplate } | undefined)?.template;
      if (template) {
        for (const key of LABEL_KEYS) expect({ where, key, onPods: Boolean(template.metadata.labels[key]) }).toEqual({ where, key, onPods: true });
      }
    }
  });

  describe.each(APPS.map(({ app, portKey }) => [app, portKey] as const))('%s', (app, portKey) => {
    it('has a Deployment, a Service, a HorizontalPodAutoscaler on that Deployment and a PodDisruptionBudget for its pods', () => {
      const deployment = find('Deployment', app);
      expect(deployment).toBeDefined();
      const podLabels = podTemplate(deployment as K8sObject).metadata.labels;
      const otherPods = ofKind('Deployment')
        .filter((other) => other.metadata.name !== app)
        .map((other) => podTemplate(other).metadata.labels);

      const service = find('Service', app);
      const serviceSelector = (service?.spec as { selector?: Record<string, string> } | undefined)?.selector;
      expect(matches(serviceSelector, podLabels)).toBe(true);
      expect(otherPods.some((labels) => matches(serviceSelector, labels))).toBe(false);

      const hpa = find('HorizontalPodAutoscaler', app);
      expect(hpa?.apiVersion).toBe('autoscaling/v2');
      expect((hpa?.spec as { scaleTargetRef?: unknown } | undefined)?.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: app });
      const hpaSpec = hpa?.spec as { minReplicas: number; maxReplicas: number; metrics: { resource?: { name: string } }[] };
      expect(hpaSpec.minReplicas).toBeGreaterThanOrEqual(1);
      expect(hpaSpec.maxReplicas).toBeGreaterThanOrEqual(hpaSpec.minReplicas);
      expect(hpaSpec.metrics.map((metric) => metric.resource?.name)).toContain('cpu');
      // The autoscaler owns the count: a `replicas` in the manifest would reset it on every apply.
      expect((deployment?.spec as { replicas?: number }).replicas).toBeUndefined();

      const pdb = find('PodDisruptionBudget', app);
      expect(pdb?.apiVersion).toBe('policy/v1');
      const pdbSelector = (pdb?.spec as { selector?: { matchLabels?: Record<string, string> } } | undefined)?.selector?.matchLabels;
      expect(matches(pdbSelector, podLabels)).toBe(true);
      expect(otherPods.some((labels) => matches(pdbSelector, labels))).toBe(false);
    });

    it("probes /health/live and /health/ready on the container port that equals the app's port variable, which the Service targets", () => {
      const container = appContainer(app);
      const { config } = environmentOf(container);
      const variable = portVariable(portKey);
      expect(config[variable]).toBeDefined();
      const port = loadConfig(config)[portKey];
      const resolvePort = (reference: string | number | undefined) =>
        typeof reference === 'number' ? reference : container.ports?.find((candidate) => candidate.name === reference)?.containerPort;

      expect(container.ports?.map((entry) => entry.containerPort)).toEqual([port]);
      expect({ path: container.startupProbe?.httpGet?.path, port: resolvePort(container.startupProbe?.httpGet?.port) }).toEqual({ path: routes.live, port });
      expect({ path: container.livenessProbe?.httpGet?.path, port: resolvePort(container.livenessProbe?.httpGet?.port) }).toEqual({ path: routes.live, port });
      expect({ path: container.readinessProbe?.httpGet?.path, port: resolvePort(container.readinessProbe?.httpGet?.port) }).toEqual({ path: routes.ready, port });

      const servicePorts = (find('Service', app)?.spec as { ports: { targetPort: string | number }[] }).ports;
      expect(servicePorts.map((entry) => resolvePort(entry.targetPort))).toEqual([port]);
    });

    it('takes its configuration from a rendered ConfigMap and the Secret, with names the apps read only, and never migrates', () => {
      const container = appContainer(app);
      const { configMap, secretName, secret, config, secretData } = environmentOf(container);
      expect(configMap).toBeDefined();
      expect(secretName).toMatch(/^interns-secrets/);
      const names = [...Object.keys(config), ...Object.keys(secretData), ...(container.env ?? []).map((entry) => entry.name)];
      expect(names.filter((name) => !known.has(name))).toEqual([]);
      expect(config.RUN_MIGRATIONS).toBe('false');
      // Every value is one loadConfig accepts.
      expect(loadConfig({ ...config, ...secretData }).runMigrations).toBe(false);
      if (overlay === 'prod') {
        // Provided out of band: no secret values in the repository.
        expect(secret).toBeUndefined();
        expect(secretName).toBe('interns-secrets');
      } else {
        expect(Object.keys(secretData).sort()).toEqual(['DAEMON_SIGNING_KEY', 'DATABASE_URL', 'MODEL_API_KEY']);
        expect(Object.keys(config).filter((name) => name in secretData)).toEqual([]);
      }
    });

    it('drains within its grace period, runs unprivileged with requests and a memory limit, and spreads over nodes and zones', () => {
      const deployment = find('Deployment', app) as K8sObject;
      const template = podTemplate(deployment);
      const container = appContainer(app);
      const preStop = container.lifecycle?.preStop?.exec?.command ?? [];
      expect(preStop[0]).toBe('sleep');
      expect(template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(Number(preStop[1]) + GATEWAY_SHUTDOWN_GRACE_SECONDS);

      expect(template.spec.securityContext?.runAsNonRoot).toBe(true);
      expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
      expect(container.resources?.requests).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
      expect(container.resources?.limits?.memory).toEqual(expect.any(String));

      const spread = template.spec.topologySpreadConstraints ?? [];
      expect(spread.map((constraint) => constraint.topologyKey).sort()).toEqual(['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
      for (const constraint of spread) expect(matches(constraint.labelSelector.matchLabels, template.metadata.labels)).toBe(true);
      expect(spread.find((constraint) => constraint.topologyKey === 'topology.kubernetes.io/zone')?.whenUnsatisfiable).toBe('ScheduleAnyway');
    });
  });

  it("keeps runs' workspaces on the shared claim at DATA_DIR: ReadWriteMany to scale out, else one replica", () => {
    const template = podTemplate(find('Deployment', 'runs') as K8sObject);
    const container = appContainer('runs');
    const dataDir = loadConfig(environmentOf(container).config).dataDir;
    const volumeName = container.volumeMounts?.find((mount) => mount.mountPath === dataDir)?.name;
    const claimName = template.spec.volumes?.find((volume) => volume.name === volumeName)?.persistentVolumeClaim?.claimName;
    expect(claimName).toBeDefined();
    const claim = find('PersistentVolumeClaim', claimName as string);
    const accessModes = (claim?.spec as { accessModes: string[] }).accessModes;
    const hpa = find('HorizontalPodAutoscaler', 'runs')?.spec as { minReplicas: number; maxReplicas: number };
    if (overlay === 'prod') {
      expect(accessModes).toEqual(['ReadWriteMany']);
      expect(hpa.minReplicas).toBeGreaterThanOrEqual(2);
    } else {
      expect(accessModes).toEqual(['ReadWriteOnce']);
      expect(hpa.maxReplicas).toBe(1);
    }
    if (!accessModes.includes('ReadWriteMany')) expect(hpa.maxReplicas).toBe(1);
  });

  it('gives lifecycle a signing key from the Secret whenever it may run more than one replica', () => {
    const hpa = find('HorizontalPodAutoscaler', 'lifecycle')?.spec as { maxReplicas: number };
    const { secret, secretData } = environmentOf(appContainer('lifecycle'));
    if (hpa.maxReplicas > 1) {
      // Either out of band (documented in the overlay), or generated with a real key.
      expect(secret === undefined || (secretData.DAEMON_SIGNING_KEY ?? '') !== '').toBe(true);
    }
    if (overlay === 'dev') expect(hpa.maxReplicas).toBe(1);
  });

  it('runs the migrations as a Job of the same release, configured like the apps', () => {
    const job = find('Job', 'migrations');
    expect(job).toBeDefined();
    const spec = job?.spec as { backoffLimit?: number; ttlSecondsAfterFinished?: number; template: PodTemplate };
    expect(spec.backoffLimit).toBeGreaterThan(0);
    expect(spec.ttlSecondsAfterFinished).toBeGreaterThan(0);
    expect(spec.template.spec.restartPolicy).toBe('Never');
    const [container] = spec.template.spec.containers;
    const tagOf = (image: string) => image.split(':')[1];
    expect(container.image).toMatch(/^interns\/migrations:/);
    const appEnvironment = environmentOf(appContainer('gateway'));
    for (const { app } of APPS) expect({ app, tag: tagOf(appContainer(app).image) }).toEqual({ app, tag: tagOf(container.image) });
    const jobEnvironment = environmentOf(container);
    expect({ configMap: jobEnvironment.configMapName, secret: jobEnvironment.secretName }).toEqual({
      configMap: appEnvironment.configMapName,
      secret: appEnvironment.secretName,
    });
    expect(container.securityContext?.readOnlyRootFilesystem).toBe(true);
  });

  if (overlay === 'dev') {
    it('brings NATS with JetStream and PostgreSQL in the cluster, where the configuration points', () => {
      const nats = find('StatefulSet', 'nats');
      const postgres = find('StatefulSet', 'postgres');
      expect(nats).toBeDefined();
      expect(postgres).toBeDefined();
      const natsContainer = podTemplate(nats as K8sObject).spec.containers[0];
      expect(natsContainer.args).toContain('-js');
      expect(natsContainer.readinessProbe?.httpGet?.path).toMatch(/^\/healthz/);
      const monitor = natsContainer.ports?.find((entry) => entry.name === natsContainer.readinessProbe?.httpGet?.port)?.containerPort;
      expect(monitor).toBe(8222);
      expect(podTemplate(postgres as K8sObject).spec.containers[0].image).toBe('postgres:15');

      const { config, secretData } = environmentOf(appContainer('runs'));
      const natsUrl = new URL(loadConfig(config).natsUrl);
      const databaseUrl = new URL(loadConfig({ ...config, ...secretData }).databaseUrl);
      const servicePort = (name: string, port: number) =>
        (find('Service', name)?.spec as { ports: { port: number }[] } | undefined)?.ports.some((entry) => entry.port === port);
      expect({ host: natsUrl.hostname, served: servicePort(natsUrl.hostname, Number(natsUrl.port)) }).toEqual({ host: 'nats', served: true });
      expect({ host: databaseUrl.hostname, served: servicePort(databaseUrl.hostname, Number(databaseUrl.port)) }).toEqual({
        host: 'postgres',
        served: true,
      });
    });
  } else {
    it('runs no NATS or PostgreSQL of its own and points at external ones', () => {
      const workloads = objects.filter((object) => ['Deployment', 'StatefulSet', 'DaemonSet'].includes(object.kind));
      expect(workloads.map((object) => object.metadata.name).sort()).toEqual(APPS.map(({ app }) => app).sort());
      expect(find('Service', 'nats')).toBeUndefined();
      expect(find('Service', 'postgres')).toBeUndefined();
      const natsHost = new URL(loadConfig(environmentOf(appContainer('runs')).config).natsUrl).hostname;
      // A fully qualified name, not an in-namespace Service of this overlay.
      expect(natsHost).toContain('.');
    });
  }
});
