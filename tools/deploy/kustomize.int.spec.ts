/**
 * deploy/k8s, checked offline: every overlay (alone, and with each runs component) renders with `kubectl
 * kustomize`, every object is valid for its kind (kubernetes-models), and what the objects say agrees with
 * the apps: ports, probe routes, environment names (read from loadConfig, not a list kept here), one Secret
 * per workload with only its secrets, each app's own NATS credentials and nothing else, the runs pod's sandbox
 * settings, migrations as a Job, storage and replica rules. The dev overlay generates its NATS Secrets from
 * nats-setup's output and its vault key pair from vault-key's, neither ever committed: the test renders a copy
 * of deploy/k8s after running the commands the overlay documents.
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import * as models from 'kubernetes-models';
import { parseAllDocuments } from 'yaml';
import { fromSeed } from '@nats-io/nkeys';
import { loadConfig } from '@interns/contracts';
import { serviceDatabaseUrl } from '@interns/database';
import { parseNatsCreds } from '@interns/messaging';
import { KUBECTL, notInstalled } from '../test/preflight';
import { appEntry, runProcess } from './node-process';
import {
  APPS,
  configEnvNames,
  healthRoutes,
  MIGRATIONS,
  portVariable,
  RUNS_SANDBOX_CAPABILITIES,
  SECRET_NAMES,
  SECRETS_OF,
  SIDECAR_OF,
} from './app-facts';

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
  /** `Always` on an init container: a native sidecar. */
  restartPolicy?: string;
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    runAsNonRoot?: boolean;
    runAsUser?: number;
    seccompProfile?: { type: string };
    privileged?: boolean;
    procMount?: string;
    capabilities?: { drop?: string[]; add?: string[] };
  };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: {
    containers: Container[];
    initContainers?: Container[];
    terminationGracePeriodSeconds?: number;
    restartPolicy?: string;
    hostUsers?: boolean;
    runtimeClassName?: string;
    securityContext?: {
      runAsNonRoot?: boolean;
      runAsUser?: number;
      fsGroup?: number;
      seccompProfile?: { type: string };
      appArmorProfile?: { type: string };
    };
    topologySpreadConstraints?: { topologyKey: string; whenUnsatisfiable: string; labelSelector: { matchLabels: Record<string, string> } }[];
    volumes?: {
      name: string;
      persistentVolumeClaim?: { claimName: string };
      secret?: { secretName: string; defaultMode?: number };
      emptyDir?: Record<string, unknown>;
    }[];
  };
}

const OVERLAYS = ['dev', 'prod'] as const;
const LABEL_KEYS = ['app.kubernetes.io/name', 'app.kubernetes.io/part-of', 'app.kubernetes.io/component'];
/** The gateway's own shutdown grace (apps/gateway/src/main.ts); every app gets at least that after preStop. */
const GATEWAY_SHUTDOWN_GRACE_SECONDS = 15;

/** Where the dev overlay expects nats-setup's output (git ignores it), relative to the repository root. */
const DEV_NATS_AUTH = 'deploy/k8s/overlays/dev/nats-auth';
/** Where the dev overlay expects vault-key's pair (git ignores it), relative to the repository root. */
const DEV_VAULT_KEYS = 'deploy/k8s/overlays/dev/vault-keys';
const DEV_KUSTOMIZATION = 'deploy/k8s/overlays/dev/kustomization.yaml';
/** The copy of deploy/k8s that is rendered: `<root>/deploy/k8s`, with the dev overlay's NATS users and vault pair generated. */
let renderRoot: string;

/** The arguments of the `command` the dev overlay's header tells the operator to run first. */
async function devSetupArgs(command: 'nats-setup' | 'vault-key', what: string): Promise<string[]> {
  const kustomization = await readFile(DEV_KUSTOMIZATION, 'utf8');
  const line = new RegExp(`^#\\s+npm run admin -- (${command} .*)$`, 'm').exec(kustomization)?.[1];
  if (!line) throw new Error(`the dev overlay does not say how to generate its ${what}`);
  return line.trim().split(/\s+/);
}

/** Inside `dir` (or `dir` itself). */
const isWithin = (path: string, dir: string) => resolve(path) === resolve(dir) || resolve(path).startsWith(`${resolve(dir)}/`);

beforeAll(async () => {
  renderRoot = await mkdtemp(join(tmpdir(), 'interns-k8s-'));
  // A developer's own nats-auth and vault-keys are not copied: the test generates its own, as the overlay says.
  await cp('deploy/k8s', join(renderRoot, 'deploy/k8s'), {
    recursive: true,
    filter: (source) => !isWithin(source, DEV_NATS_AUTH) && !isWithin(source, DEV_VAULT_KEYS),
  });
  for (const [command, what] of [
    ['nats-setup', 'NATS users'],
    ['vault-key', 'vault key pair'],
  ] as const) {
    const setup = await runProcess(process.execPath, [appEntry('admin'), ...(await devSetupArgs(command, what))], {}, renderRoot);
    if (setup.code !== 0) throw new Error(`${command} failed: ${setup.stderr}`);
  }
}, 30_000);

afterAll(async () => {
  if (renderRoot) await rm(renderRoot, { recursive: true, force: true });
});

/** A file nats-setup wrote for the dev overlay. */
function devNatsAuthFile(path: string): Promise<string> {
  return readFile(join(renderRoot, DEV_NATS_AUTH, path), 'utf8');
}

/** A file vault-key wrote for the dev overlay. */
function devVaultKeyFile(name: 'VAULT_MASTER_KEY' | 'VAULT_PUBLIC_KEY'): Promise<string> {
  return readFile(join(renderRoot, DEV_VAULT_KEYS, name), 'utf8');
}

it('commits no vault key to the dev overlay: its pair is generated into the ignored vault-keys/', async () => {
  const kustomization = await readFile(DEV_KUSTOMIZATION, 'utf8');
  expect(kustomization).not.toMatch(/"d"\s*:/);
  expect(kustomization).not.toMatch(/VAULT_(MASTER|PUBLIC)_KEY=\s*'?\{/);
  expect(await readFile('.gitignore', 'utf8')).toMatch(new RegExp(`^${DEV_VAULT_KEYS}/?$`, 'm'));
});

function kubectlKustomize(dir: string): Promise<string> {
  return new Promise((done, fail) => {
    execFile('kubectl', ['kustomize', dir], { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT') {
        fail(new Error(notInstalled(KUBECTL)));
      } else if (error) {
        fail(new Error(`kubectl kustomize ${dir} failed: ${error.message}\n${stderr}`));
      } else {
        done(stdout);
      }
    });
  });
}

async function renderDirectory(dir: string): Promise<K8sObject[]> {
  const documents = parseAllDocuments(await kubectlKustomize(dir));
  return documents.map((document) => {
    if (document.errors.length > 0) throw new Error(`unparsable output of ${dir}: ${document.errors[0].message}`);
    const object = document.toJS() as K8sObject;
    // kustomize folds a long base64 value over lines; the API server decodes it ignoring the line breaks.
    if (object.kind === 'Secret' && object.data) {
      object.data = Object.fromEntries(Object.entries(object.data).map(([key, value]) => [key, value.replace(/\s+/g, '')]));
    }
    return object;
  });
}

function render(overlay: string): Promise<K8sObject[]> {
  return renderDirectory(join(renderRoot, `deploy/k8s/overlays/${overlay}`));
}

/** An overlay with one of deploy/k8s/components added, as an operator would (kustomize wants relative paths). */
async function renderWithComponent(overlay: string, component: string): Promise<K8sObject[]> {
  const dir = await mkdtemp(join(tmpdir(), 'interns-kustomize-'));
  try {
    const from = (path: string) => relative(dir, join(renderRoot, path));
    await writeFile(
      join(dir, 'kustomization.yaml'),
      [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        'resources:',
        `  - ${from(`deploy/k8s/overlays/${overlay}`)}`,
        'components:',
        `  - ${from(`deploy/k8s/components/${component}`)}`,
        '',
      ].join('\n'),
    );
    return await renderDirectory(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
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

function validate(objects: K8sObject[], where: string): void {
  expect(objects.length).toBeGreaterThan(0);
  for (const object of objects) {
    const Model = modelFor(object.apiVersion, object.kind);
    if (!Model) throw new Error(`${where}: no kubernetes-models class for ${object.apiVersion} ${object.kind}`);
    expect(() => new Model(object).validate()).not.toThrow();
  }
}

const podTemplate = (object: K8sObject) => (object.spec as { template: PodTemplate }).template;

/** Every container of a pod: its app containers and its init containers (sidecars among them). */
const allContainers = (template: PodTemplate) => [...(template.spec.initContainers ?? []), ...template.spec.containers];

/** The workload whose pods run `app`: its own, or the one it is a sidecar of. */
const hostOf = (app: string) => SIDECAR_OF[app as keyof typeof SIDECAR_OF] ?? app;

/** A workload's container named `name` (its own app's, or a sidecar's). */
function containerOf(objects: K8sObject[], kind: string, workloadName: string, name = workloadName): { template: PodTemplate; container: Container } {
  const workload = objects.find((object) => object.kind === kind && object.metadata.name === workloadName);
  const template = workload && podTemplate(workload);
  const container = template && allContainers(template).find((candidate) => candidate.name === name);
  if (!template || !container) throw new Error(`no ${kind} ${workloadName} with a container ${name}`);
  return { template, container };
}

/** A generated Secret's name is `<name>-<content hash>`; one provided out of band is just `<name>`. */
function isSecretNamed(actual: string, name: string): boolean {
  return actual === name || new RegExp(`^${name}-[a-z0-9]{10}$`).test(actual);
}

describe.each(OVERLAYS)('kustomize overlay %s', (overlay) => {
  let objects: K8sObject[];
  const routes = healthRoutes();
  const known = configEnvNames();

  const find = (kind: string, name: string) => objects.find((object) => object.kind === kind && object.metadata.name === name);
  const ofKind = (kind: string) => objects.filter((object) => object.kind === kind);
  const appContainer = (app: string) => containerOf(objects, 'Deployment', hostOf(app), app).container;
  /**
   * The ConfigMaps and Secrets a container takes its environment from, merged in order (a Secret provided
   * out of band is absent here: its name is referenced, its data unknown).
   */
  const environmentOf = (container: Container) => {
    const configMapNames = (container.envFrom ?? []).flatMap((source) => (source.configMapRef ? [source.configMapRef.name] : []));
    const secretNames = (container.envFrom ?? []).flatMap((source) => (source.secretRef ? [source.secretRef.name] : []));
    const configMaps = configMapNames.map((name) => find('ConfigMap', name));
    const secrets = secretNames.map((name) => find('Secret', name));
    const config: Record<string, string> = Object.assign({}, ...configMaps.map((configMap) => configMap?.data ?? {}));
    const secretData: Record<string, string> = Object.fromEntries(
      secrets.flatMap((secret) => Object.entries(secret?.data ?? {})).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]),
    );
    return { configMapNames, secretNames, configMaps, secrets, config, secretData };
  };

  beforeAll(async () => {
    objects = await render(overlay);
  });

  it('renders objects that are valid for their kind', () => {
    validate(objects, overlay);
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
    const host = hostOf(app);

    it('has a Deployment, a Service, a HorizontalPodAutoscaler on that Deployment and a PodDisruptionBudget for its pods (a sidecar: those of its host)', () => {
      if (host !== app) {
        // One per pod of its host, scaled, disrupted and served with it: nothing of its own.
        for (const kind of ['Deployment', 'Service', 'HorizontalPodAutoscaler', 'PodDisruptionBudget']) {
          expect({ kind, own: find(kind, app) }).toEqual({ kind, own: undefined });
        }
        const template = podTemplate(find('Deployment', host) as K8sObject);
        // A native sidecar: started (and ready) before the app containers, stopped after them.
        expect(template.spec.initContainers?.find((container) => container.name === app)?.restartPolicy).toBe('Always');
        expect(template.spec.containers.map((container) => container.name)).not.toContain(app);
        return;
      }
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

      // Besides runs' file transfer port (FILE_TRANSFER_PORT, checked below with its NetworkPolicy), only the app's port.
      const fileTransferPort = loadConfig(config).fileTransferPort;
      expect(container.ports?.map((entry) => entry.containerPort).filter((other) => other !== fileTransferPort || fileTransferPort === 0)).toEqual([port]);
      expect({ path: container.startupProbe?.httpGet?.path, port: resolvePort(container.startupProbe?.httpGet?.port) }).toEqual({ path: routes.live, port });
      expect({ path: container.livenessProbe?.httpGet?.path, port: resolvePort(container.livenessProbe?.httpGet?.port) }).toEqual({ path: routes.live, port });
      expect({ path: container.readinessProbe?.httpGet?.path, port: resolvePort(container.readinessProbe?.httpGet?.port) }).toEqual({ path: routes.ready, port });

      // The Service of its pods names this port once (the host's Service also names its sidecar's).
      const servicePorts = (find('Service', host)?.spec as { ports: { targetPort: string | number }[] }).ports;
      expect(servicePorts.filter((entry) => resolvePort(entry.targetPort) === port)).toHaveLength(1);
      const podPorts = allContainers(podTemplate(find('Deployment', host) as K8sObject)).flatMap((candidate) => candidate.ports ?? []);
      for (const entry of servicePorts) {
        expect(podPorts.some((candidate) => candidate.name === entry.targetPort || candidate.containerPort === entry.targetPort)).toBe(true);
      }
    });

    it('takes its configuration from rendered ConfigMaps and only its own Secret, with names the apps read only, and never migrates', () => {
      const container = appContainer(app);
      const { configMaps, secretNames, secrets, config, secretData } = environmentOf(container);
      expect(configMaps.length).toBeGreaterThan(0);
      expect(configMaps.every((configMap) => configMap !== undefined)).toBe(true);
      expect(secretNames).toHaveLength(1);
      expect({ secret: secretNames[0], own: isSecretNamed(secretNames[0] ?? '', `${app}-secrets`) }).toEqual({ secret: secretNames[0], own: true });
      const names = [...Object.keys(config), ...Object.keys(secretData), ...(container.env ?? []).map((entry) => entry.name)];
      expect(names.filter((name) => !known.has(name))).toEqual([]);
      // No secret in plain configuration.
      expect(Object.keys(config).filter((name) => SECRET_NAMES.has(name))).toEqual([]);
      expect(config.RUN_MIGRATIONS).toBe('false');
      // Every value is one loadConfig accepts.
      expect(loadConfig({ ...config, ...secretData }).runMigrations).toBe(false);
      if (overlay === 'prod') {
        // Provided out of band: no secret values in the repository.
        expect(secrets).toEqual([undefined]);
      } else {
        expect(Object.keys(secretData).sort()).toEqual([...SECRETS_OF[app]].sort());
      }
    });

    it('mounts its own NATS credentials Secret, read-only, at NATS_CREDS_DIR, and no other', async () => {
      const { template, container } = containerOf(objects, 'Deployment', host, app);
      const credsDir = loadConfig(environmentOf(container).config).natsCredsDir;
      expect(credsDir).toEqual(expect.any(String));
      const mounted = new Set((container.volumeMounts ?? []).map((mount) => mount.name));
      const secretVolumes = (template.spec.volumes ?? []).filter((volume) => mounted.has(volume.name) && volume.secret?.secretName.startsWith('nats-'));
      expect(secretVolumes).toHaveLength(1);
      const [volume] = secretVolumes;
      expect({ app, own: isSecretNamed(volume.secret?.secretName ?? '', `nats-creds-${app}`) }).toEqual({ app, own: true });
      // Group-readable at most: the image user reads it through fsGroup (runs: as the pod's root).
      expect((volume.secret?.defaultMode ?? 0o644) & 0o037).toBe(0);
      expect(container.volumeMounts?.filter((mount) => mount.name === volume.name)).toEqual([{ name: volume.name, mountPath: credsDir, readOnly: true }]);
      if (overlay === 'dev') {
        const secret = find('Secret', volume.secret?.secretName ?? '');
        const files = Object.entries(secret?.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]);
        // Exactly the file the process opens (<NATS_CREDS_DIR>/<app>.creds), as nats-setup wrote it.
        expect(files).toEqual([[`${app}.creds`, await devNatsAuthFile(`${app}/${app}.creds`)]]);
      } else {
        expect(volume.secret?.secretName).toBe(`nats-creds-${app}`);
      }
    });

    it('drains within its grace period, runs with requests and a memory limit, and spreads over nodes and zones', () => {
      const deployment = find('Deployment', host) as K8sObject;
      const template = podTemplate(deployment);
      const container = appContainer(app);
      const preStop = container.lifecycle?.preStop?.exec?.command ?? [];
      expect(preStop[0]).toBe('sleep');
      expect(template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(Number(preStop[1]) + GATEWAY_SHUTDOWN_GRACE_SECONDS);

      expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
      expect(container.securityContext?.capabilities?.drop).toEqual(['ALL']);
      if (app !== 'runs') {
        // Only runs needs root, for its shell sandbox (below); a sidecar of its pod says otherwise for itself.
        expect(container.securityContext?.runAsNonRoot ?? template.spec.securityContext?.runAsNonRoot).toBe(true);
        expect(container.securityContext?.capabilities?.add).toBeUndefined();
      }
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

  it('gives every workload a Secret of its own, read by no other', () => {
    const workloads = [...ofKind('Deployment'), ...ofKind('Job')].filter((object) => object.metadata.labels?.['app.kubernetes.io/part-of'] === 'interns');
    const readers = new Map<string, string[]>();
    for (const workload of workloads) {
      // Per container: a sidecar is a process of its own, with a Secret of its own.
      for (const container of allContainers(podTemplate(workload))) {
        const reader = `${workload.metadata.name}/${container.name}`;
        for (const name of environmentOf(container).secretNames) readers.set(name, [...(readers.get(name) ?? []), reader]);
      }
    }
    expect([...readers.values()].filter((names) => names.length > 1)).toEqual([]);
    expect([...readers.keys()].length).toBe(APPS.length + 1);
  });

  it('runs the shell sandbox: root of its own user namespace, only the capabilities it needs, an unmasked /proc', () => {
    const { template, container } = containerOf(objects, 'Deployment', 'runs');
    const { config, secretData } = environmentOf(container);
    // A user namespace for the pod: its root and capabilities are nothing on the node; it allows procMount.
    expect(template.spec.hostUsers).toBe(false);
    expect(template.spec.securityContext).toMatchObject({ runAsNonRoot: false, runAsUser: 0 });
    // The kubelet would re-own every intern's files to one group.
    expect(template.spec.securityContext?.fsGroup).toBeUndefined();
    // bwrap's clone(CLONE_NEWUSER), unshare, mount and pivot_root, which the runtime defaults refuse.
    expect(template.spec.securityContext?.seccompProfile?.type).toBe('Unconfined');
    expect(template.spec.securityContext?.appArmorProfile?.type).toBe('Unconfined');
    expect(container.securityContext?.procMount).toBe('Unmasked');
    expect(container.securityContext?.privileged).toBeUndefined();
    expect([...(container.securityContext?.capabilities?.add ?? [])].sort()).toEqual([...RUNS_SANDBOX_CAPABILITIES].sort());

    const settings = loadConfig({ ...config, ...secretData });
    expect(settings).toMatchObject({ runtimeSandbox: 'bwrap', runtimeNetwork: 'egress' });
    // Interns' uids must exist in the pod's user namespace, which maps ids 0-65535.
    expect(settings.sandboxUidBase).toBeGreaterThan(1000);
    expect(settings.sandboxUidBase).toBeLessThanOrEqual(65535 - 50000);
    expect(Object.keys(config)).not.toContain('KEYS_DIR');
    expect((container.env ?? []).map((entry) => entry.name)).not.toContain('KEYS_DIR');
  });

  it("runs the egress proxy beside runs: the socket directory at one path in both, the vault's key in egress alone, no root", async () => {
    const { template, container: runs } = containerOf(objects, 'Deployment', 'runs');
    const egress = appContainer('egress');
    const socketDir = loadConfig(environmentOf(egress).config).egressSocketDir;
    const mountHolding = (container: Container) =>
      (container.volumeMounts ?? []).find((mount) => socketDir === mount.mountPath || socketDir.startsWith(`${mount.mountPath}/`));
    const [inEgress, inRuns] = [mountHolding(egress), mountHolding(runs)];
    // The same volume at the same path: runs hands over and binds the very path egress answers with.
    expect(inEgress).toBeDefined();
    expect({ name: inRuns?.name, mountPath: inRuns?.mountPath }).toEqual({ name: inEgress?.name, mountPath: inEgress?.mountPath });
    expect(template.spec.volumes?.find((volume) => volume.name === inEgress?.name)?.emptyDir).toBeDefined();

    // Only egress can open a secret's value; runs hosts tenant code.
    if (overlay === 'dev') {
      // vault-key's pair, as written: lifecycle's public key and egress's private key are one pair.
      const masterKey = environmentOf(egress).secretData.VAULT_MASTER_KEY ?? '';
      const publicKey = environmentOf(appContainer('lifecycle')).secretData.VAULT_PUBLIC_KEY ?? '';
      expect(masterKey).toBe(await devVaultKeyFile('VAULT_MASTER_KEY'));
      expect(publicKey).toBe(await devVaultKeyFile('VAULT_PUBLIC_KEY'));
      const master = JSON.parse(masterKey) as { kty?: string; crv?: string; x?: string; d?: string };
      expect(master).toMatchObject({ kty: 'OKP', crv: 'X25519', x: expect.any(String), d: expect.any(String) });
      expect(JSON.parse(publicKey)).toEqual({ kty: 'OKP', crv: 'X25519', x: master.x });
    }
    for (const other of APPS.map(({ app }) => app).filter((app) => app !== 'egress')) {
      const { config, secretData } = environmentOf(appContainer(other));
      expect({ other, masterKey: Object.keys({ ...config, ...secretData }).includes('VAULT_MASTER_KEY') }).toEqual({ other, masterKey: false });
    }
    // Not the pod's root: the image user under the runtime's default profile, with no capability.
    expect(egress.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } });
    expect(egress.securityContext?.capabilities).toEqual({ drop: ['ALL'] });
    expect(egress.securityContext?.procMount).toBeUndefined();
    // Its KEYS_DIR (the egress CA) is on no volume runs mounts, and it never sees the workspaces.
    const runsVolumes = new Set((runs.volumeMounts ?? []).map((mount) => mount.name));
    const keysDir = loadConfig(environmentOf(egress).config).keysDir;
    const keysMount = (egress.volumeMounts ?? [])
      .filter((mount) => keysDir.startsWith(`${mount.mountPath}/`))
      .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    expect(keysMount).toBeDefined();
    expect(runsVolumes.has(keysMount?.name ?? '')).toBe(false);
    const claims = new Set((template.spec.volumes ?? []).filter((volume) => volume.persistentVolumeClaim).map((volume) => volume.name));
    expect((egress.volumeMounts ?? []).filter((mount) => claims.has(mount.name))).toEqual([]);
  });

  it('bounds where the runs pods connect: DNS, NATS, PostgreSQL, and public addresses on the egress ports only', () => {
    interface Peer {
      ipBlock?: { cidr: string; except?: string[] };
      podSelector?: { matchLabels?: Record<string, string> };
      namespaceSelector?: Record<string, unknown>;
    }
    interface Rule {
      to?: Peer[];
      ports?: { protocol?: string; port: number }[];
    }
    const policies = ofKind('NetworkPolicy').filter((policy) =>
      matches((policy.spec as { podSelector: { matchLabels?: Record<string, string> } }).podSelector.matchLabels, podTemplate(find('Deployment', 'runs') as K8sObject).metadata.labels),
    );
    expect(policies).toHaveLength(1);
    const spec = policies[0].spec as { policyTypes: string[]; egress: Rule[] };
    expect(spec.policyTypes).toContain('Egress');
    const portsOf = (rule: Rule) => (rule.ports ?? []).map((entry) => `${entry.protocol ?? 'TCP'}/${entry.port}`).sort();
    // Every rule names its ports: nothing is open on every port.
    for (const rule of spec.egress) expect(portsOf(rule).length).toBeGreaterThan(0);

    const dns = spec.egress.find((rule) => portsOf(rule).includes('UDP/53'));
    expect(dns?.to?.every((peer) => peer.podSelector?.matchLabels?.['k8s-app'] === 'kube-dns')).toBe(true);

    const { config } = environmentOf(appContainer('runs'));
    const settings = loadConfig({ ...config, ...environmentOf(appContainer('runs')).secretData });
    const infrastructure = [new URL(settings.natsUrl), new URL(settings.databaseUrl)].map((url) => `TCP/${url.port}`);
    for (const port of infrastructure) expect({ port, open: spec.egress.some((rule) => portsOf(rule).includes(port)) }).toEqual({ port, open: true });

    // The egress ports go to public addresses only: private, shared, link-local and loopback ranges excepted.
    const egressPorts = (environmentOf(appContainer('egress')).config.EGRESS_PORTS ?? '').split(',').map((port) => `TCP/${port.trim()}`).sort();
    const publicRule = spec.egress.find((rule) => rule.to?.some((peer) => peer.ipBlock?.cidr === '0.0.0.0/0'));
    expect(portsOf(publicRule ?? {})).toEqual(egressPorts);
    const blocks = (publicRule?.to ?? []).map((peer) => peer.ipBlock);
    expect(blocks.find((block) => block?.cidr === '0.0.0.0/0')?.except).toEqual(
      expect.arrayContaining(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '127.0.0.0/8', '100.64.0.0/10']),
    );
    expect(blocks.find((block) => block?.cidr === '::/0')?.except).toEqual(expect.arrayContaining(['fc00::/7', 'fe80::/10', '::1/128']));
    // No other rule reaches everywhere on those ports.
    for (const rule of spec.egress.filter((candidate) => candidate !== publicRule && candidate.to === undefined)) {
      expect(portsOf(rule).filter((port) => egressPorts.includes(port))).toEqual([]);
    }
  });

  it('opens the runs file transfer port on the pod IP, advertised as such, and admits only gateway pods to it', () => {
    const runs = appContainer('runs');
    const settings = loadConfig({ ...environmentOf(runs).config, FILE_TRANSFER_ADVERTISED_HOST: 'pod-ip' });
    expect(settings.fileTransferPort).toBeGreaterThan(0);
    expect(settings.fileTransferHost).toBe('0.0.0.0');
    expect(runs.ports?.find((port) => port.name === 'file-transfer')?.containerPort).toBe(settings.fileTransferPort);
    expect(runs.env?.find((entry) => entry.name === 'FILE_TRANSFER_ADVERTISED_HOST')?.valueFrom?.fieldRef?.fieldPath).toBe('status.podIP');

    interface IngressRule {
      from?: { podSelector?: { matchLabels?: Record<string, string> }; namespaceSelector?: unknown; ipBlock?: unknown }[];
      ports?: { protocol?: string; port: number }[];
    }
    const [policy] = ofKind('NetworkPolicy').filter((candidate) =>
      matches((candidate.spec as { podSelector: { matchLabels?: Record<string, string> } }).podSelector.matchLabels, podTemplate(find('Deployment', 'runs') as K8sObject).metadata.labels),
    );
    const spec = policy.spec as { policyTypes: string[]; ingress?: IngressRule[] };
    expect(spec.policyTypes).toContain('Ingress');
    const reaching = (spec.ingress ?? []).filter((rule) => rule.ports === undefined || rule.ports.some((port) => port.port === settings.fileTransferPort));
    const gatewayLabels = podTemplate(find('Deployment', hostOf('gateway')) as K8sObject).metadata.labels;
    expect(reaching).toHaveLength(1);
    expect(reaching[0].from?.length).toBe(1);
    expect(reaching[0].from?.[0].namespaceSelector).toBeUndefined();
    expect(matches(reaching[0].from?.[0].podSelector?.matchLabels, gatewayLabels)).toBe(true);
    // The health and metrics ports stay open to the kubelet and Prometheus.
    const open = (spec.ingress ?? []).filter((rule) => rule.from === undefined).flatMap((rule) => (rule.ports ?? []).map((port) => port.port));
    expect(open).toEqual(expect.arrayContaining([loadConfig(environmentOf(runs).config).runsPort]));
  });

  it('gives lifecycle a signing key from the Secret whenever it may run more than one replica', () => {
    const hpa = find('HorizontalPodAutoscaler', 'lifecycle')?.spec as { maxReplicas: number };
    const { secrets, secretData } = environmentOf(appContainer('lifecycle'));
    const [secret] = secrets;
    if (hpa.maxReplicas > 1) {
      // Either out of band (documented in the overlay), or generated with a real key.
      expect(secret === undefined || (secretData.DAEMON_SIGNING_KEY ?? '') !== '').toBe(true);
    }
    if (overlay === 'dev') expect(hpa.maxReplicas).toBe(1);
  });

  it('runs the migrations as a Job of the same release, configured like the apps, with its own Secret', () => {
    const job = find('Job', MIGRATIONS);
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
    expect(jobEnvironment.configMapNames).toEqual(appEnvironment.configMapNames);
    expect(jobEnvironment.secretNames).toHaveLength(1);
    expect(isSecretNamed(jobEnvironment.secretNames[0] ?? '', `${MIGRATIONS}-secrets`)).toBe(true);
    if (overlay === 'dev') {
      expect(Object.keys(jobEnvironment.secretData).sort()).toEqual([...SECRETS_OF.migrations].sort());
      // The database the apps use, which each app reaches as its own role (admin db-setup's), never as the owner.
      const owner = jobEnvironment.secretData.DATABASE_URL;
      for (const { app } of APPS) {
        expect({ app, url: environmentOf(appContainer(app)).secretData.DATABASE_URL }).toEqual({ app, url: serviceDatabaseUrl(owner, app) });
      }
    }
    expect(container.securityContext?.readOnlyRootFilesystem).toBe(true);
    // It never talks to NATS: no credentials.
    expect(spec.template.spec.volumes?.filter((volume) => volume.secret !== undefined) ?? []).toEqual([]);
  });

  if (overlay === 'dev') {
    it('brings NATS with JetStream and PostgreSQL in the cluster, where the configuration points', () => {
      const nats = find('StatefulSet', 'nats');
      const postgres = find('StatefulSet', 'postgres');
      expect(nats).toBeDefined();
      expect(postgres).toBeDefined();
      const natsContainer = podTemplate(nats as K8sObject).spec.containers[0];
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

    it("runs NATS on nats-setup's configuration: JetStream on its volume, the apps' prefix, no one anonymous", async () => {
      const template = podTemplate(find('StatefulSet', 'nats') as K8sObject);
      const natsContainer = template.spec.containers[0];
      const args = natsContainer.args ?? [];
      const configPath = args[args.indexOf('-c') + 1] ?? '';
      // The file alone turns JetStream on; -js/-sd beside its store_dir make nats-server refuse to start.
      expect(args.filter((arg) => ['-js', '-sd', '--jetstream', '--store_dir'].includes(arg))).toEqual([]);
      const mount = natsContainer.volumeMounts?.find((candidate) => configPath.startsWith(`${candidate.mountPath}/`));
      expect(mount?.readOnly).toBe(true);
      const secretName = template.spec.volumes?.find((volume) => volume.name === mount?.name)?.secret?.secretName ?? '';
      expect(isSecretNamed(secretName, 'nats-server-conf')).toBe(true);
      const configFile = configPath.slice((mount?.mountPath.length ?? 0) + 1);
      const conf = Buffer.from(find('Secret', secretName)?.data?.[configFile] ?? '', 'base64').toString('utf8');
      expect(conf).toBe(await devNatsAuthFile(`server/${configFile}`));

      const storeDir = /store_dir: "([^"]+)"/.exec(conf)?.[1];
      const jetstreamMount = natsContainer.volumeMounts?.find((candidate) => candidate.mountPath === storeDir);
      const claims = ((find('StatefulSet', 'nats')?.spec as { volumeClaimTemplates?: { metadata: { name: string } }[] }).volumeClaimTemplates ?? []).map(
        (claim) => claim.metadata.name,
      );
      expect(claims).toContain(jetstreamMount?.name);
      const prefix = loadConfig(environmentOf(appContainer('runs')).config).natsPrefix;
      expect(conf).toContain(`for NATS_PREFIX=${prefix};`);
      expect(conf).not.toMatch(/^\s*no_auth_user/m);
      // Each app's user is the key of the file the app mounts.
      for (const { app } of APPS) {
        const seed = parseNatsCreds(await devNatsAuthFile(`${app}/${app}.creds`), app);
        const nkey = fromSeed(new TextEncoder().encode(seed)).getPublicKey();
        expect({ app, listed: new RegExp(`# ${app}\\s*\\{\\s*nkey: "${nkey}"`).test(conf) }).toEqual({ app, listed: true });
      }
    });
  } else {
    it('runs no NATS or PostgreSQL of its own and points at external ones', () => {
      const workloads = objects.filter((object) => ['Deployment', 'StatefulSet', 'DaemonSet'].includes(object.kind));
      expect(workloads.map((object) => object.metadata.name).sort()).toEqual(
        APPS.filter(({ app }) => hostOf(app) === app)
          .map(({ app }) => app)
          .sort(),
      );
      expect(find('Service', 'nats')).toBeUndefined();
      expect(find('Service', 'postgres')).toBeUndefined();
      const natsHost = new URL(loadConfig(environmentOf(appContainer('runs')).config).natsUrl).hostname;
      // A fully qualified name, not an in-namespace Service of this overlay.
      expect(natsHost).toContain('.');
    });
  }
});

describe.each(OVERLAYS)('the runs components over overlay %s (clusters that cannot give runs a user namespace)', (overlay) => {
  it('runs-without-sandbox: runs back to the unprivileged image user under the default profiles (the shell refuses to run)', async () => {
    const objects = await renderWithComponent(overlay, 'runs-without-sandbox');
    validate(objects, `${overlay} + runs-without-sandbox`);
    const { template, container } = containerOf(objects, 'Deployment', 'runs');
    expect(template.spec.hostUsers).toBeUndefined();
    expect(template.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } });
    expect(template.spec.securityContext?.appArmorProfile).toBeUndefined();
    expect(container.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    // The egress sidecar keeps its own: the component changes the runs container only.
    expect(containerOf(objects, 'Deployment', 'runs', 'egress').container.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
  });

  it('runs-in-vm: runs in a VM runtime class, privileged inside the VM only, without a pod user namespace', async () => {
    const objects = await renderWithComponent(overlay, 'runs-in-vm');
    validate(objects, `${overlay} + runs-in-vm`);
    const { template, container } = containerOf(objects, 'Deployment', 'runs');
    expect(template.spec.runtimeClassName).toEqual(expect.any(String));
    expect(template.spec.hostUsers).toBeUndefined();
    // The API refuses privileged together with allowPrivilegeEscalation: false, and procMount needs hostUsers: false.
    expect(container.securityContext).toEqual({ privileged: true, readOnlyRootFilesystem: true });
    expect(containerOf(objects, 'Deployment', 'runs', 'egress').container.securityContext?.privileged).toBeUndefined();
    for (const other of ['gateway', 'lifecycle', 'analytics']) {
      expect({ other, runtimeClassName: containerOf(objects, 'Deployment', other).template.spec.runtimeClassName }).toEqual({ other, runtimeClassName: undefined });
    }
  });
});
