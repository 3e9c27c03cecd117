/**
 * What the deployment files must agree with, read from the code itself (never a hand-kept copy): the
 * environment names loadConfig reads, each app's port variable, and the health routes the apps serve.
 */
import 'reflect-metadata';
import { PATH_METADATA } from '@nestjs/common/constants';
import { databasePasswordVariable, loadConfig, PlatformConfig, SERVICE_NAMES, ServiceName } from '@interns/contracts';
import { HealthHttpController } from '../../libs/service-runtime/src/health.http.controller';

type PortKey = { [K in keyof PlatformConfig]: PlatformConfig[K] extends number ? K : never }[keyof PlatformConfig];

/** The deployable apps and the config field each listens on. */
export const APPS: readonly { app: ServiceName; portKey: PortKey }[] = [
  { app: 'gateway', portKey: 'gatewayPort' },
  { app: 'lifecycle', portKey: 'lifecyclePort' },
  { app: 'runs', portKey: 'runsPort' },
  { app: 'analytics', portKey: 'analyticsPort' },
  { app: 'webhooks', portKey: 'webhooksPort' },
  { app: 'egress', portKey: 'egressPort' },
];

/**
 * Apps that Kubernetes runs as a sidecar container in another app's pods rather than as a Deployment of their
 * own: egress makes each sandboxed command's listener socket in a directory runs must see at the same path, so
 * one egress runs beside each runs replica (docs/deployment.md, "The egress proxy").
 */
export const SIDECAR_OF: Readonly<Partial<Record<ServiceName, ServiceName>>> = { egress: 'runs' };

/** The one-shot step that creates the services' database roles and applies every schema (compose service, Kubernetes Job). */
export const MIGRATIONS = 'migrations';

/** Compose's one-shot step that writes the NATS users (`admin nats-setup --split`), and its admin CLI tool service. */
export const NATS_SETUP = 'nats-setup';
export const ADMIN = 'admin';

/**
 * The secrets each process is given: only the ones it uses (issue 11: an intern's shell must not be one
 * step from every credential of the platform). Everything else the processes read is plain configuration.
 */
export const SECRETS_OF: Readonly<Record<ServiceName | typeof MIGRATIONS, readonly string[]>> = {
  gateway: ['DATABASE_URL'],
  lifecycle: ['DAEMON_SIGNING_KEY', 'DATABASE_URL', 'VAULT_PUBLIC_KEY'],
  runs: ['DATABASE_URL', 'MODEL_API_KEY'],
  analytics: ['DATABASE_URL'],
  webhooks: ['DATABASE_URL'],
  // The only process that can open a secret's value (interface section 19).
  egress: ['DATABASE_URL', 'VAULT_MASTER_KEY'],
  // The owner's URL, and the password db-setup gives each service's role.
  migrations: ['DATABASE_URL', ...SERVICE_NAMES.map(databasePasswordVariable)],
};

/** Every secret name some process is given. */
export const SECRET_NAMES: ReadonlySet<string> = new Set(Object.values(SECRETS_OF).flat());

/** Capabilities the runs process holds, and why: its shell sandbox (CONTRACT section 15). Nothing else adds any. */
export const RUNS_SANDBOX_CAPABILITIES = [
  // prlimit and bwrap are started as the intern's own uid and gid.
  'SETUID',
  'SETGID',
  // Workspaces hold files of the interns' uids: create, hand over, archive and remove them.
  'CHOWN',
  'FOWNER',
  'DAC_OVERRIDE',
  // End a sandbox on timeout, cancel, suspend or delete.
  'KILL',
] as const;

/** Every environment name loadConfig reads, recorded by an env object that notes each key asked for. */
export function configEnvNames(): Set<string> {
  const names = new Set<string>();
  const recorder = new Proxy<Record<string, string | undefined>>(
    {},
    {
      get(_target, key) {
        if (typeof key === 'string') names.add(key);
        return undefined;
      },
    },
  );
  loadConfig(recorder);
  return names;
}

const PROBE_PORT = 54_321;

/** The environment name that sets `portKey`: the one whose value loadConfig puts there. */
export function portVariable(portKey: PortKey): string {
  const matches = [...configEnvNames()].filter((name) => {
    try {
      return loadConfig({ [name]: String(PROBE_PORT) })[portKey] === PROBE_PORT;
    } catch {
      return false; // a name that does not take a number
    }
  });
  if (matches.length !== 1) throw new Error(`expected one variable setting ${portKey}, found ${JSON.stringify(matches)}`);
  return matches[0];
}

function routeOf(handler: (...args: never[]) => unknown): string {
  const base = Reflect.getMetadata(PATH_METADATA, HealthHttpController) as string;
  const path = Reflect.getMetadata(PATH_METADATA, handler) as string;
  return `/${base}/${path}`.replace(/\/+/g, '/');
}

/** The liveness and readiness routes every app serves (libs/service-runtime). */
export function healthRoutes(): { live: string; ready: string } {
  return {
    live: routeOf(HealthHttpController.prototype.live),
    ready: routeOf(HealthHttpController.prototype.ready),
  };
}
