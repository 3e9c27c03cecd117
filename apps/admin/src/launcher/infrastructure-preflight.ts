// launcher/: the pieces of the `npm start` launcher: the infrastructure preflight, readiness lines, the log format.
/**
 * `npm start` needs PostgreSQL and NATS. Without them the services would only log connection errors and
 * retry, so the launcher first opens a TCP connection to each (a short timeout) and, for each one that does
 * not answer, prints one line saying which one is missing and how to start it.
 */
import { connect, type Socket } from 'node:net';
import pg from 'pg';
import { loadConfig } from '@interns/contracts';

export const PREFLIGHT_TIMEOUT_MS = 2000;

/** Where a client connects: a TCP host and port, or a Unix socket path (PostgreSQL's `?host=/run/...`). */
export type Endpoint = TcpEndpoint | { path: string };
export type TcpEndpoint = { host: string; port: number };

export function describeEndpoint(endpoint: Endpoint): string {
  if ('path' in endpoint) return endpoint.path;
  return endpoint.host.includes(':') ? `[${endpoint.host}]:${endpoint.port}` : `${endpoint.host}:${endpoint.port}`;
}

/** The server a PostgreSQL URL names, read by pg itself (as the services read it); a directory host is a Unix socket. */
export function postgresEndpoint(databaseUrl: string): Endpoint {
  const { host, port } = new pg.Client({ connectionString: databaseUrl });
  return host.startsWith('/') ? { path: `${host.replace(/\/+$/, '')}/.s.PGSQL.${port}` } : { host, port };
}

/** The servers a NATS URL names (`nats://host:port`, `host:port`, comma-separated), port 4222 by default. */
export function natsEndpoints(natsUrl: string): TcpEndpoint[] {
  return natsUrl
    .split(',')
    .map((server) => server.trim())
    .filter((server) => server !== '')
    .map((server) => {
      const url = new URL(server.includes('://') ? server : `nats://${server}`);
      return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port || 4222) };
    });
}

/** Undefined when something accepts a connection at `endpoint`, else why not. */
export function unreachable(endpoint: Endpoint, timeoutMs = PREFLIGHT_TIMEOUT_MS): Promise<string | undefined> {
  return new Promise((done) => {
    const socket: Socket = connect(endpoint);
    const finish = (reason: string | undefined) => {
      socket.destroy();
      done(reason);
    };
    socket.setTimeout(timeoutMs, () => finish(`no answer within ${timeoutMs} ms`));
    socket.once('connect', () => finish(undefined));
    socket.once('error', (error: NodeJS.ErrnoException) => finish(REASONS[error.code ?? ''] ?? error.message));
  });
}

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOENT: 'no such socket',
  ENOTFOUND: 'unknown host',
  EHOSTUNREACH: 'host unreachable',
};

const START_POSTGRES = 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start';


/**
 * One line per dependency that does not answer, e.g. `PostgreSQL is not reachable on 127.0.0.1:5432
 * (DATABASE_URL; connection refused): start it there, on Debian: pg_ctlcluster ...`. Empty when both answer.
 * The URLs and their defaults are the services' own (loadConfig).
 */
export async function infrastructurePreflight(env: NodeJS.ProcessEnv, timeoutMs = PREFLIGHT_TIMEOUT_MS): Promise<string[]> {
  const { databaseUrl, natsUrl } = loadConfig({ DATABASE_URL: env.DATABASE_URL, NATS_URL: env.NATS_URL });
  const postgres = postgresEndpoint(databaseUrl);
  const nats = natsEndpoints(natsUrl);
  const [postgresProblem, ...natsProblems] = await Promise.all([postgres, ...nats].map((endpoint) => unreachable(endpoint, timeoutMs)));
  const lines: string[] = [];
  if (postgresProblem !== undefined) {
    lines.push(`PostgreSQL is not reachable on ${describeEndpoint(postgres)} (DATABASE_URL; ${postgresProblem}): start it there, on Debian: ${START_POSTGRES}`);
  }
  // NATS clients use any server of the list that answers.
  if (natsProblems.length > 0 && natsProblems.every((problem) => problem !== undefined)) {
    lines.push(`NATS is not reachable on ${nats.map(describeEndpoint).join(', ')} (NATS_URL; ${natsProblems[0]}): start it there with JetStream: nats-server -js -a ${nats[0].host} -p ${nats[0].port}`);
  }
  return lines;
}
