import type { Platform } from '@interns/testing';

/**
 * What the benchmarks and their baseline processes would otherwise each write again: output, Ctrl-C handling,
 * a benchmark's and a baseline process' main, the statistics of their reports, the identities they apply and
 * the provisioning of an intern. Importing it has no side effect (baseline processes import it too); only
 * `runBenchmark` installs signal handlers.
 */

/** One line on stdout, where every benchmark prints its progress and report. */
export function log(line = ''): void {
  process.stdout.write(`${line}\n`);
}

/** Aborted by Ctrl-C / SIGTERM so a benchmark's finally block still tears everything down. */
export const interruption = new AbortController();

export function throwIfInterrupted(): void {
  if (interruption.signal.aborted) throw new Error('interrupted');
}

let interruptionInstalled = false;

function installInterruption(): void {
  if (interruptionInstalled) return;
  interruptionInstalled = true;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => interruption.abort());
  }
}

export interface BenchmarkOptions {
  /**
   * Whether Ctrl-C / SIGTERM abort `interruption` (default) instead of ending the process at once. A benchmark
   * that never checks `interruption` passes false, or it could not be stopped.
   */
  interruptible?: boolean;
  /** Prints the failure's stack rather than only its message. */
  failureStack?: boolean;
}

/**
 * A benchmark's main: has Ctrl-C / SIGTERM abort `interruption` (unless `interruptible` is false), runs `body`,
 * then exits 0 whatever its figures were, or prints `<name> benchmark failed: <message>` and exits 1 when the
 * benchmark itself broke.
 */
export function runBenchmark(name: string, body: () => Promise<void>, options: BenchmarkOptions = {}): void {
  if (options.interruptible ?? true) installInterruption();
  body().then(
    () => process.exit(0),
    (error: unknown) => {
      const message = error instanceof Error ? (options.failureStack ? (error.stack ?? error.message) : error.message) : String(error);
      process.stderr.write(`${name} benchmark failed: ${message}\n`);
      process.exit(1);
    },
  );
}

/**
 * Runs `start` as a baseline process' main; SIGTERM or SIGINT closes what it returned and exits. When it
 * fails (a throw before its first await included), prints `<name> failed: <message>` and exits 1.
 */
export function runAsProcess(name: string, start: () => Promise<{ close(): Promise<void> }>): void {
  (async () => start())().then(
    (running) => {
      const shutdown = () => {
        running.close().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.once('SIGTERM', shutdown);
      process.once('SIGINT', shutdown);
    },
    (error: unknown) => {
      console.error(`${name} failed: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}

export function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
}

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** `promise`, or an error naming `what` once `ms` have passed without it settling. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const upper = sorted[middle] as number;
  return sorted.length % 2 === 1 ? upper : ((sorted[middle - 1] as number) + upper) / 2;
}

export function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

/** Nearest-rank percentile of values in any order; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

/** The organization and member of `benchIdentities`, also handed to baselines that answer as that member. */
export const BENCH_ORGANIZATION_ID = 'bench';
export const BENCH_MEMBER_ID = 'bench-user';

export interface BenchCallerIdentity {
  workspaceId: string;
  /** Default: BENCH_ORGANIZATION_ID. */
  organizationId?: string;
  /** Default: BENCH_MEMBER_ID. */
  memberId?: string;
  userKey: string;
}

/**
 * The identities file a benchmark applies to its platform: one organization (in the programme, lifecycle
 * writes on), one workspace, one member and that member's user key for the workspace.
 */
export function benchIdentities({
  workspaceId,
  organizationId = BENCH_ORGANIZATION_ID,
  memberId = BENCH_MEMBER_ID,
  userKey,
}: BenchCallerIdentity) {
  return {
    organizations: [{ id: organizationId, name: 'Bench', programme: true, lifecycle_writes: true }],
    workspaces: [{ id: workspaceId, organization_id: organizationId, name: 'bench' }],
    members: [{ id: memberId, organization_id: organizationId, active: true }],
    api_keys: [{ key: userKey, kind: 'user', organization_id: organizationId, workspace_id: workspaceId, member_id: memberId }],
  };
}

export interface ScriptedInternOptions {
  description: string;
  /** How long the intern may take to be running. */
  timeoutMs: number;
  /** The pause between two looks at its status. */
  pollMs: number;
  /** For a benchmark provisioning several: errors say "an intern" and name the one that was not running. */
  oneOfSeveral?: boolean;
}

/**
 * Creates an intern with `provision: true` and no model (DEFAULT_MODEL: `local/scripted` unless set)
 * through the API, then waits until it is running. Resolves to its id.
 */
export async function provisionScriptedIntern(
  platform: Platform,
  token: string,
  name: string,
  { description, timeoutMs, pollMs, oneOfSeveral = false }: ScriptedInternOptions,
): Promise<string> {
  const created = await platform.api<{ id: string }>('/api/v1/interns', {
    token,
    json: { name, description, provision: true },
  });
  if (created.status !== 201) {
    throw new Error(`creating ${oneOfSeveral ? 'an' : 'the'} intern answered ${created.status}: ${created.text}`);
  }
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    throwIfInterrupted();
    const got = await platform.api<{ status: string }>(`/api/v1/interns/${created.body.id}`, { token });
    if (got.body.status === 'running') return created.body.id;
    await sleep(pollMs);
  }
  throw new Error(`${oneOfSeveral ? `intern ${name}` : 'the intern'} was not running within ${timeoutMs} ms`);
}
