/**
 * docker-compose.yml, checked offline (no Docker engine, no docker-compose binary): it must be a valid Compose
 * file (merge keys resolved, variables interpolated, the Compose Specification's schema: compose-file.ts), and
 * the resolved file must start the system the way the apps expect (health checks, migrations first, ports
 * and environment names that loadConfig reads, each service's own secrets, the runs sandbox's container
 * settings, the egress proxy beside it). Also: the image's HEALTHCHECK and healthcheck.mjs agree with the apps'
 * routes and ports, and the runs image has what its sandbox is built with.
 */
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { copyFile, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadConfig, NATS_PROCESSES } from '@interns/contracts';
import { databaseNameOf, serviceRoleName } from '@interns/database';
import { ADMIN, APPS, configEnvNames, healthRoutes, MIGRATIONS, NATS_SETUP, portVariable, RUNS_SANDBOX_CAPABILITIES, SECRET_NAMES, SECRETS_OF } from './app-facts';
import { ComposeFile, ComposeService, ComposeVolumeMount, readComposeFile } from './compose-file';
import { runNode } from './node-process';

const INFRA = ['postgres', 'nats'];
/** Steps that run once and exit (`up` waits for their exit, not their health), and the tool service. */
const ONE_SHOTS = [MIGRATIONS, NATS_SETUP, ADMIN];
const NATS_AUTH = 'nats-auth';

/** The mounts of the nats-auth volume in `service`, short forms expanded (a short form has no subpath). */
function natsAuthMounts(service: ComposeService): ComposeVolumeMount[] {
  return (service.volumes ?? [])
    .map((volume): ComposeVolumeMount => {
      if (typeof volume !== 'string') return volume;
      const [source, target, mode] = volume.split(':');
      return { type: 'volume', source, target, read_only: mode === 'ro' };
    })
    .filter((volume) => volume.source === NATS_AUTH);
}

function namedVolumeAt(service: ComposeService, target: string): string | undefined {
  for (const volume of service.volumes ?? []) {
    if (typeof volume === 'string') {
      const [source, mountedAt] = volume.split(':');
      // A named volume's source has no path separator (a bind mount's does).
      if (mountedAt === target && !source.includes('/')) return source;
    } else if (volume.target === target && volume.type === 'volume') {
      return volume.source;
    }
  }
  return undefined;
}

/** The named volume holding `path`: the one mounted at the longest prefix of it. */
function namedVolumeHolding(service: ComposeService, path: string): string | undefined {
  const mountPoints = (service.volumes ?? []).map((volume) => (typeof volume === 'string' ? volume.split(':')[1] : volume.target));
  const holder = mountPoints
    .filter((mountedAt) => path === mountedAt || path.startsWith(`${mountedAt.replace(/\/+$/, '')}/`))
    .sort((a, b) => b.length - a.length)[0];
  return holder === undefined ? undefined : namedVolumeAt(service, holder);
}

describe('docker-compose.yml', () => {
  let compose: ComposeFile;
  const routes = healthRoutes();

  beforeAll(() => {
    // No environment: only the file's own defaults apply, as with a bare `docker compose config`.
    compose = readComposeFile('docker-compose.yml', {});
  });

  it('has the infrastructure, the one-shot migrations and nats-setup steps, the apps and the admin tool', () => {
    expect(Object.keys(compose.services).sort()).toEqual([...INFRA, ...ONE_SHOTS, ...APPS.map(({ app }) => app)].sort());
    // The admin CLI is run on demand (`docker compose run --rm admin ...`), never by `up`.
    expect(compose.services[ADMIN].profiles).toEqual(['tools']);
  });

  it('gives every long-running service a health check; the one-shot steps are waited on for their exit instead', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      if (ONE_SHOTS.includes(name)) {
        // Disabled (`disable: true`, or its equivalent, the test ["NONE"]): nothing waits on its health.
        expect(service.healthcheck?.disable === true || service.healthcheck?.test?.[0] === 'NONE').toBe(true);
        expect(service.restart).toBe('no');
      } else {
        const test = service.healthcheck?.test ?? [];
        expect({ name, command: ['CMD', 'CMD-SHELL'].includes(test[0]) && test.length > 1 }).toEqual({ name, command: true });
      }
    }
  });

  it('builds each app from the one Dockerfile with its APP, and the migrations image with APP=migrations', () => {
    for (const name of [MIGRATIONS, ...APPS.map(({ app }) => app)]) {
      const build = compose.services[name].build;
      expect({ name, dockerfile: build?.dockerfile, app: build?.args?.APP }).toEqual({
        name,
        dockerfile: 'deploy/docker/Dockerfile',
        app: name,
      });
      expect(resolve(build?.context ?? '')).toBe(process.cwd());
    }
  });

  it('starts the apps after the migrations completed and the infrastructure is healthy', () => {
    for (const { app } of APPS) {
      const dependsOn = compose.services[app].depends_on ?? {};
      expect({ app, migrations: dependsOn[MIGRATIONS]?.condition }).toEqual({ app, migrations: 'service_completed_successfully' });
      for (const infra of INFRA) expect({ app, infra, condition: dependsOn[infra]?.condition }).toEqual({ app, infra, condition: 'service_healthy' });
    }
    expect(compose.services[MIGRATIONS].depends_on?.postgres?.condition).toBe('service_healthy');
    for (const { app } of APPS.filter(({ app }) => app !== 'gateway')) {
      expect(compose.services.gateway.depends_on?.[app]?.condition).toBe('service_healthy');
    }
  });

  it('sets only environment names the apps read, never migrates in an app, and migrates the database the apps use', () => {
    const known = configEnvNames();
    const owner = new URL(compose.services[MIGRATIONS].environment?.DATABASE_URL ?? '');
    for (const { app } of APPS) {
      const environment = compose.services[app].environment ?? {};
      expect({ app, unknown: Object.keys(environment).filter((name) => !known.has(name)) }).toEqual({ app, unknown: [] });
      expect(environment.RUN_MIGRATIONS).toBe('false');
      expect(loadConfig(environment).runMigrations).toBe(false);
      // The owner's database, as the app's own role (admin db-setup's name for it), never as the owner.
      const own = new URL(environment.DATABASE_URL ?? '');
      expect({ app, host: own.host, database: own.pathname, user: own.username }).toEqual({
        app,
        host: owner.host,
        database: owner.pathname,
        user: serviceRoleName(databaseNameOf(owner.toString()), app),
      });
    }
    expect(Object.keys(compose.services[MIGRATIONS].environment ?? {}).filter((name) => !known.has(name))).toEqual([]);
  });

  it('runs NATS on the configuration nats-setup generates, with the prefix the apps use', () => {
    const setup = compose.services[NATS_SETUP];
    const nats = compose.services.nats;
    const command = setup.command ?? [];
    const flag = (name: string): string | undefined => command[command.indexOf(name) + 1];
    expect(command.slice(0, 1)).toEqual(['nats-setup']);
    expect(command).toContain('--split');
    expect(setup.entrypoint?.slice(-1)).toEqual(['admin']);
    expect(namedVolumeAt(setup, flag('--dir') ?? '')).toBe(NATS_AUTH);
    // JetStream's store as NATS sees it: the nats-data volume.
    expect(namedVolumeAt(nats, flag('--store-dir') ?? '')).toBe('nats-data');
    for (const { app } of APPS) expect({ app, prefix: compose.services[app].environment?.NATS_PREFIX }).toEqual({ app, prefix: setup.environment?.NATS_PREFIX });
    expect(nats.depends_on?.[NATS_SETUP]?.condition).toBe('service_completed_successfully');
    // nats-server -c <the server subdirectory>/nats-server.conf, and no flag that would fight the file's store_dir.
    const [serverMount] = natsAuthMounts(nats);
    expect(serverMount).toMatchObject({ type: 'volume', read_only: true, volume: { subpath: 'server' } });
    const natsCommand = nats.command ?? [];
    expect(natsCommand[natsCommand.indexOf('-c') + 1]).toBe(`${serverMount.target}/nats-server.conf`);
    expect(natsCommand).not.toContain('-js');
    expect(natsCommand).not.toContain('-sd');
  });

  it('mounts into each process only its own NATS credentials, read-only, at its NATS_CREDS_DIR', () => {
    const processes = [...APPS.map(({ app }) => app), ADMIN];
    expect([...processes].sort()).toEqual([...NATS_PROCESSES].sort());
    for (const name of processes) {
      const service = compose.services[name];
      const credsDir = service.environment?.NATS_CREDS_DIR;
      expect({ name, credsDir: loadConfig(service.environment ?? {}).natsCredsDir }).toEqual({ name, credsDir });
      const mounts = natsAuthMounts(service);
      expect({ name, mounts }).toEqual({
        name,
        mounts: [{ type: 'volume', source: NATS_AUTH, target: credsDir, read_only: true, volume: { subpath: name } }],
      });
    }
    // Only the step that writes it sees the whole volume; the infrastructure and migrations see no credentials.
    for (const [name, service] of Object.entries(compose.services)) {
      const whole = natsAuthMounts(service).filter((mount) => mount.volume?.subpath === undefined);
      expect({ name, whole: whole.length }).toEqual({ name, whole: name === NATS_SETUP ? 1 : 0 });
    }
    for (const name of [...INFRA, MIGRATIONS]) {
      expect({ name, credsDir: compose.services[name].environment?.NATS_CREDS_DIR }).toEqual({ name, credsDir: undefined });
    }
  });

  it("publishes each app's own port (its *_PORT variable) and health-checks readiness on it", () => {
    for (const { app, portKey } of APPS) {
      const service = compose.services[app];
      const environment = service.environment ?? {};
      const port = loadConfig(environment)[portKey];
      expect({ app, variable: environment[portVariable(portKey)] }).toEqual({ app, variable: String(port) });
      expect({ app, targets: (service.ports ?? []).map((entry) => entry.target) }).toEqual({ app, targets: [port] });
      expect(service.healthcheck?.test).toEqual(['CMD', 'node', 'healthcheck.mjs', routes.ready]);
    }
    // The API's host port is fixed (the others are ephemeral, so their services can be scaled).
    expect(Number(compose.services.gateway.ports?.[0]?.published)).toBe(loadConfig(compose.services.gateway.environment ?? {}).gatewayPort);
  });

  it('gives each service only the secrets it needs: MODEL_API_KEY to runs alone, DAEMON_SIGNING_KEY to lifecycle alone', () => {
    for (const name of [MIGRATIONS, ...APPS.map(({ app }) => app)] as const) {
      const secrets = Object.keys(compose.services[name].environment ?? {}).filter((key) => SECRET_NAMES.has(key));
      expect({ name, secrets: secrets.sort() }).toEqual({ name, secrets: [...SECRETS_OF[name]].sort() });
    }
  });

  it('never gives runs a KEYS_DIR, and keeps the keys of lifecycle, the gateway and egress on volumes runs does not mount', () => {
    const runs = compose.services.runs;
    expect(Object.keys(runs.environment ?? {})).not.toContain('KEYS_DIR');
    const runsVolumes = (runs.volumes ?? []).map((volume) => (typeof volume === 'string' ? volume.split(':')[0] : volume.source));
    for (const app of ['lifecycle', 'gateway', 'egress']) {
      const service = compose.services[app];
      const volume = namedVolumeHolding(service, loadConfig(service.environment ?? {}).keysDir);
      expect({ app, declared: Object.keys(compose.volumes ?? {}).includes(volume ?? '') }).toEqual({ app, declared: true });
      expect({ app, sharedWithRuns: runsVolumes.includes(volume ?? '') }).toEqual({ app, sharedWithRuns: false });
    }
  });

  it('starts runs as root with only the capabilities of its shell sandbox, every other app as the image user with none', () => {
    const runs = compose.services.runs;
    expect(runs.user).toBe('0:0');
    expect(runs.cap_drop).toEqual(['ALL']);
    expect([...(runs.cap_add ?? [])].sort()).toEqual([...RUNS_SANDBOX_CAPABILITIES].sort());
    // bwrap's namespaces, mounts and fresh /proc; no privilege gain through execve.
    expect([...(runs.security_opt ?? [])].sort()).toEqual(
      ['apparmor=unconfined', 'no-new-privileges:true', 'seccomp=unconfined', 'systempaths=unconfined'].sort(),
    );
    expect(loadConfig(runs.environment ?? {}).runtimeSandbox).toBe('bwrap');
    for (const { app } of APPS.filter(({ app }) => app !== 'runs')) {
      const service = compose.services[app];
      expect({ app, user: service.user, added: service.cap_add, options: service.security_opt }).toEqual({
        app,
        user: undefined,
        added: undefined,
        options: undefined,
      });
    }
  });

  it("runs the egress proxy as runs' only way out: the socket volume at one path in both, egress as the image user", () => {
    const runs = compose.services.runs;
    const egress = compose.services.egress;
    expect(loadConfig(runs.environment ?? {}).runtimeNetwork).toBe('egress');
    const socketDir = loadConfig(egress.environment ?? {}).egressSocketDir;
    const volume = namedVolumeHolding(egress, socketDir);
    expect(Object.keys(compose.volumes ?? {})).toContain(volume);
    // runs hands over and binds the very path egress answers with, so it must mount the volume at the same place.
    expect(namedVolumeHolding(runs, socketDir)).toBe(volume);
    const mountPoint = (service: ComposeService) =>
      (service.volumes ?? []).map((entry) => (typeof entry === 'string' ? entry.split(':') : [entry.source, entry.target])).find(([source]) => source === volume)?.[1];
    expect(mountPoint(runs)).toBe(mountPoint(egress));
    // A sandbox's first command needs its listener.
    expect(runs.depends_on?.egress?.condition).toBe('service_healthy');
  });

  it('keeps the state of runs, lifecycle, gateway and egress on a named volume at their DATA_DIR', () => {
    for (const app of ['runs', 'lifecycle', 'gateway', 'egress']) {
      const service = compose.services[app];
      const dataDir = loadConfig(service.environment ?? {}).dataDir;
      const volume = namedVolumeAt(service, dataDir);
      expect({ app, declared: Object.keys(compose.volumes ?? {}).includes(volume ?? '') }).toEqual({ app, declared: true });
    }
  });
});

describe('the image health check', () => {
  const routes = healthRoutes();

  it('probes liveness with healthcheck.mjs, which the image copies next to dist/', async () => {
    const dockerfile = await readFile('deploy/docker/Dockerfile', 'utf8');
    const healthcheck = /^HEALTHCHECK .*CMD (\[.*\])$/m.exec(dockerfile);
    expect(healthcheck).not.toBeNull();
    expect(JSON.parse(healthcheck?.[1] ?? '[]')).toEqual(['node', 'healthcheck.mjs', routes.live]);
    expect(dockerfile).toMatch(/^COPY deploy\/docker\/healthcheck\.mjs .*\.\/$/m);
    expect(dockerfile).toMatch(/^WORKDIR \/app$/m);
  });

  it('installs bubblewrap, util-linux (prlimit, setpriv), libseccomp, e2fsprogs, socat and the CA bundle in the runs image, and fails its build when one is missing', async () => {
    const dockerfile = await readFile('deploy/docker/Dockerfile', 'utf8');
    expect(dockerfile).toMatch(/if \[ "\$APP" = runs \]; then packages="\$packages bubblewrap util-linux libseccomp2 e2fsprogs socat ca-certificates"; fi/);
    expect(dockerfile).toMatch(
      /if \[ "\$APP" = runs \]; then bwrap --version && prlimit --version && setpriv --version && ls \/usr\/lib\/\*\/libseccomp\.so\.2 && mkfs\.ext4 -V && e2fsck -V && socat -V > \/dev\/null && test -s \/etc\/ssl\/certs\/ca-certificates\.crt; fi/,
    );
  });

  describe('healthcheck.mjs', () => {
    let dir: string;
    let server: Server;
    let port: number;

    beforeAll(async () => {
      // The image's layout: /app/healthcheck.mjs beside /app/dist (the repository's build).
      dir = await mkdtemp(join(tmpdir(), 'interns-healthcheck-'));
      await copyFile('deploy/docker/healthcheck.mjs', join(dir, 'healthcheck.mjs'));
      await symlink(resolve('dist'), join(dir, 'dist'));
      // An app stand-in: live, but not ready.
      server = createServer((request, response) => {
        response.statusCode = request.url === routes.live ? 200 : 503;
        response.end();
      });
      await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
      port = (server.address() as AddressInfo).port;
    });

    afterAll(async () => {
      await new Promise((done) => server?.close(done));
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it.each(APPS.map(({ app, portKey }) => [app, portKey] as const))(
      "probes %s on the port its variable names, and fails when the route does not answer 200",
      async (app, portKey) => {
        const env = { APP: app, [portVariable(portKey)]: String(port) };
        const script = join(dir, 'healthcheck.mjs');
        expect((await runNode(script, [routes.live], env)).code).toBe(0);
        expect((await runNode(script, [routes.ready], env)).code).toBe(1);
      },
      30_000,
    );

    it('passes for the one-shot migrations image and fails for an unknown APP', async () => {
      const script = join(dir, 'healthcheck.mjs');
      expect((await runNode(script, [routes.live], { APP: 'migrations' })).code).toBe(0);
      const unknown = await runNode(script, [routes.live], { APP: 'nonsense' });
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('unknown APP "nonsense"');
    });
  });
});
