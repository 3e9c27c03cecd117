// Over 300 lines: one benchmark script (setup, answer check, rounds, CPU accounting, row check, report) like list.bench.ts.
import { resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { INTEGRATION_EVENTS_CHECKPOINT } from '@interns/event-store';
import { freePort, Platform, PLATFORM_SERVICES, ServiceProcess, startServiceProcess } from '@interns/testing';
import { processCpuMs } from '../shared/process-cpu';
import { LoadOptions, LoadResult, runLoad } from '../list/load-generator';

/**
 * `npm run bench:create`: what `POST /api/v1/interns` costs through the real system (gateway -> NATS ->
 * lifecycle -> PostgreSQL, each its own process) compared with a bare Fastify + pg process running the same
 * statements in one transaction. Every request creates an intern with a name of its own; afterwards every
 * 201 must have left its rows. Prints figures and exits 0; exits 1 only when the benchmark itself breaks.
 */

const ORGANIZATION_ID = 'bench';
const MEMBER_ID = 'bench-user';
const USER_KEY = 'uk_bench_create';
/** Each target creates in a workspace of its own, in the same database, so the rows can be counted apart. */
const WORKSPACE_IDS = {
  gateway: '5eed0000-0000-4000-8000-0000000000c1',
  bare: '5eed0000-0000-4000-8000-0000000000c2',
} as const;

const IDENTITIES = {
  organizations: [{ id: ORGANIZATION_ID, name: 'Bench', programme: true, lifecycle_writes: true }],
  workspaces: [
    { id: WORKSPACE_IDS.gateway, organization_id: ORGANIZATION_ID, name: 'bench-gateway' },
    { id: WORKSPACE_IDS.bare, organization_id: ORGANIZATION_ID, name: 'bench-bare' },
  ],
  members: [{ id: MEMBER_ID, organization_id: ORGANIZATION_ID, active: true }],
  api_keys: [
    {
      key: USER_KEY,
      kind: 'user',
      organization_id: ORGANIZATION_ID,
      workspace_id: WORKSPACE_IDS.gateway,
      member_id: MEMBER_ID,
    },
  ],
};

const WARM_UP: Pick<LoadOptions, 'connections' | 'durationSeconds'> = { connections: 10, durationSeconds: 2 };
/** Well below either target's capacity (even on a busy machine), so the latency is a create's, not a queue's. */
const FIXED_RATE: Pick<LoadOptions, 'connections' | 'durationSeconds' | 'overallRate'> = {
  connections: 4,
  durationSeconds: 5,
  overallRate: 20,
};
const CLOSED_LOOP: Pick<LoadOptions, 'connections' | 'durationSeconds'> = { connections: 50, durationSeconds: 5 };
const ROUNDS = 2;

const AIM_P50_RATIO = 1.5;
const AIM_THROUGHPUT_RATIO = 0.5;

type TargetName = 'gateway' | 'bare';
const TARGET_NAMES = ['gateway', 'bare'] as const;

interface Target {
  name: TargetName;
  url: string;
  headers: Record<string, string>;
  /** A create body with a name no earlier request of this target used. */
  body: () => string;
  /** 201s counted so far (the answer check and every load run, warm-up included). */
  created: number;
}

interface TargetRuns {
  fixed: LoadResult[];
  closed: LoadResult[];
  /** CPU ms per process over this target's closed-loop runs. */
  cpuMs: Map<string, number>;
}

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Aborted by Ctrl-C / SIGTERM so the finally block still tears everything down. */
const interruption = new AbortController();

function throwIfInterrupted(): void {
  if (interruption.signal.aborted) throw new Error('interrupted');
}

/** Names `bench-g-000001`, `bench-b-000001`, ...: unique per target, the same length for both. */
function bodies(letter: string): () => string {
  let sequence = 0;
  return () => {
    sequence += 1;
    const name = `bench-${letter}-${String(sequence).padStart(6, '0')}`;
    return JSON.stringify({ name, description: 'benchmark intern', instructions: 'Answer briefly.' });
  };
}

async function startBare(platform: Platform): Promise<ServiceProcess> {
  const port = await freePort();
  return startServiceProcess({
    entry: resolve('dist/bench/create/bare-server.js'),
    port,
    env: {
      DATABASE_URL: platform.database.url,
      BARE_PORT: String(port),
      BARE_WORKSPACE_ID: WORKSPACE_IDS.bare,
      BARE_ORGANIZATION_ID: ORGANIZATION_ID,
      BARE_MEMBER_ID: MEMBER_ID,
    },
  });
}

/** What the two answers must share: all but the ids, times and workspace (checked for their form). */
function comparable(view: Record<string, unknown>): Record<string, unknown> {
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  const form = (key: string, pattern: RegExp) => (pattern.test(String(view[key])) ? `<${key}>` : view[key]);
  return {
    ...view,
    id: form('id', uuid),
    vault_id: form('vault_id', uuid),
    workspace_id: form('workspace_id', uuid),
    created_at: form('created_at', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    updated_at: form('updated_at', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    name: typeof view.name === 'string' ? view.name.replace(/^bench-[gb]-/, 'bench-?-') : view.name,
  };
}

/** One create on each target; the comparison is only fair if both answer 201 with the same InternView. */
async function compareAnswers(targets: Record<TargetName, Target>): Promise<string> {
  const [viaGateway, viaBare] = await Promise.all(
    TARGET_NAMES.map(async (name) => {
      const target = targets[name];
      const response = await fetch(target.url, {
        method: 'POST',
        headers: target.headers,
        body: target.body(),
      });
      if (response.status !== 201) {
        throw new Error(`${target.name} answered ${response.status}: ${await response.text()}`);
      }
      target.created += 1;
      return comparable((await response.json()) as Record<string, unknown>);
    }),
  );
  return isDeepStrictEqual(viaGateway, viaBare) ? 'alike' : 'DIFFERENT (comparison not like for like)';
}

/** CPU ms of a process so far; null once it has gone (a PostgreSQL backend may end between the two reads). */
function cpuMsIfRunning(pid: number): number | null {
  try {
    return processCpuMs(pid);
  } catch {
    return null;
  }
}

/** CPU ms so far of every process the benchmark can see, by `<label>` or `postgres:<backend pid>`. */
async function cpuSnapshot(platform: Platform, bare: ServiceProcess, db: pg.Client): Promise<Map<string, number>> {
  const processes: [string, number][] = PLATFORM_SERVICES.flatMap((service) =>
    platform.running(service).map((running): [string, number] => [service, running.pid]),
  );
  processes.push(['bare', bare.pid]);
  const backends = await db.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
  );
  for (const { pid } of backends.rows) processes.push([`postgres:${pid}`, pid]);
  const snapshot = new Map<string, number>();
  for (const [label, pid] of processes) {
    const ms = cpuMsIfRunning(pid);
    if (ms !== null) snapshot.set(label, ms);
  }
  const self = process.cpuUsage();
  snapshot.set('autocannon', (self.user + self.system) / 1000);
  return snapshot;
}

/** Adds what each process used between two snapshots; PostgreSQL backends are summed as one. */
function addCpu(total: Map<string, number>, before: Map<string, number>, after: Map<string, number>): void {
  for (const [label, ms] of after) {
    const name = label.startsWith('postgres:') ? 'postgres' : label;
    total.set(name, (total.get(name) ?? 0) + ms - (before.get(label) ?? 0));
  }
}

/** Longest wait for the background work of a run to end. */
const SETTLE_TIMEOUT_MS = 10_000;

/** Where the bench looks for background work still to do: the database and the platform's JetStream. */
interface Backlog {
  db: pg.Client;
  jsm: JetStreamManager;
  /** The platform's JetStream streams start with it (see deleteTestStreams). */
  streamPrefix: string;
}

/** Events lifecycle's relay has not passed yet, and messages its consumers (analytics, webhooks) have not acked. */
async function pendingWork({ db, jsm, streamPrefix }: Backlog): Promise<number> {
  const { rows } = await db.query<{ behind: number }>(
    `SELECT count(*)::int AS behind FROM lifecycle.events e, lifecycle.checkpoints c
      WHERE c.name = $1 AND (e.transaction_id, e.global_position) > (c.transaction_id, c.position)`,
    [INTEGRATION_EVENTS_CHECKPOINT],
  );
  let pending = rows[0]?.behind ?? 0;
  for await (const stream of jsm.streams.names()) {
    if (!stream.startsWith(streamPrefix)) continue;
    for await (const consumer of jsm.consumers.list(stream)) pending += consumer.num_pending + consumer.num_ack_pending;
  }
  return pending;
}

/**
 * Waits until everything a run committed has been relayed and consumed, so no run's background work (relay,
 * analytics, webhooks) spills into the next run. Returns how long that took.
 */
async function settle(backlog: Backlog): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < SETTLE_TIMEOUT_MS && (await pendingWork(backlog)) > 0) {
    throwIfInterrupted();
    await new Promise((done) => setTimeout(done, 50));
  }
  return Date.now() - started;
}

async function measure(target: Target, options: Omit<LoadOptions, 'url' | 'headers'>): Promise<LoadResult> {
  throwIfInterrupted();
  const result = await runLoad(
    { url: target.url, headers: target.headers, method: 'POST', body: target.body, ...options },
    interruption.signal,
  );
  target.created += result.ok;
  throwIfInterrupted();
  return result;
}

interface RowCounts {
  interns: number;
  events: number;
  vaults: number;
  icons: number;
}

/** What every create writes, counted for one workspace (`InternCreated` events by their data). */
async function countRows(db: pg.Client, workspaceId: string): Promise<RowCounts> {
  const { rows } = await db.query<RowCounts>(
    `SELECT (SELECT count(*) FROM lifecycle.interns WHERE workspace_id = $1::uuid)::int AS interns,
            (SELECT count(*) FROM lifecycle.events
              WHERE type = 'InternCreated' AND data->>'workspaceId' = $2::text)::int AS events,
            (SELECT count(*) FROM lifecycle.vaults WHERE workspace_id = $1::uuid)::int AS vaults,
            (SELECT count(*) FROM lifecycle.icons c JOIN lifecycle.interns i ON i.id = c.intern_id
              WHERE i.workspace_id = $1::uuid)::int AS icons`,
    [workspaceId, workspaceId],
  );
  return rows[0] as RowCounts;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const upper = sorted[middle] as number;
  return sorted.length % 2 === 1 ? upper : ((sorted[middle - 1] as number) + upper) / 2;
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

function statusSummary(results: LoadResult[]): string {
  const counts: Record<string, number> = {};
  for (const result of results) {
    for (const [status, count] of Object.entries(result.statusCounts)) counts[status] = (counts[status] ?? 0) + count;
  }
  const shown = Object.entries(counts).filter(([status]) => !status.startsWith('2'));
  return shown.length === 0 ? 'none' : shown.map(([status, count]) => `${status} x${count}`).join(', ');
}

interface Summary {
  p50: number;
  p99: number;
  throughput: number;
}

function summarize(runs: TargetRuns): Summary {
  return {
    p50: median(runs.fixed.map((r) => r.p50Ms)),
    p99: median(runs.fixed.map((r) => r.p99Ms)),
    throughput: median(runs.closed.map((r) => r.okPerSecond)),
  };
}

const ms = (value: number) => value.toFixed(2).padStart(9);
const rps = (value: number) => value.toFixed(0).padStart(13);

const CPU_COLUMNS = ['gateway', 'lifecycle', 'bare', 'postgres', 'analytics', 'webhooks', 'runs', 'autocannon'];

/** CPU per 2xx answer of the closed-loop runs, by process: where a create's time goes on this machine. */
function reportCpu(runs: Record<TargetName, TargetRuns>): void {
  log('');
  log('CPU ms per created intern in the closed-loop runs, by process (nats-server not counted: it is shared):');
  log(`run of  ${[...CPU_COLUMNS, 'total'].map((c) => c.padStart(11)).join('')}`);
  for (const name of TARGET_NAMES) {
    const created = sum(runs[name].closed.map((r) => r.ok));
    const perCreate = (label: string) => (runs[name].cpuMs.get(label) ?? 0) / Math.max(1, created);
    const total = sum([...runs[name].cpuMs.keys()].map(perCreate));
    log(`${name.padEnd(8)}${[...CPU_COLUMNS.map(perCreate), total].map((v) => v.toFixed(2).padStart(11)).join('')}`);
  }
}

function report(runs: Record<TargetName, TargetRuns>, answers: string): void {
  const gateway = summarize(runs.gateway);
  const bare = summarize(runs.bare);
  const p50Ratio = gateway.p50 / bare.p50;
  const throughputRatio = gateway.throughput / bare.throughput;
  const verdict = (met: boolean) => (met ? 'met' : 'MISSED');

  log('');
  log(`POST /interns, a new name each; median of ${ROUNDS} interleaved rounds; answers ${answers}`);
  log(
    `fixed rate: ${FIXED_RATE.overallRate} req/s, ${FIXED_RATE.connections} connections,` +
      ` ${FIXED_RATE.durationSeconds} s; closed loop: ${CLOSED_LOOP.connections} connections,` +
      ` ${CLOSED_LOOP.durationSeconds} s`,
  );
  log('');
  log('target      p50 ms    p99 ms   closed req/s   non-2xx   conn errors');
  for (const name of TARGET_NAMES) {
    const all = [...runs[name].fixed, ...runs[name].closed];
    const summary = name === 'gateway' ? gateway : bare;
    log(
      `${name.padEnd(8)}${ms(summary.p50)} ${ms(summary.p99)} ${rps(summary.throughput)}` +
        ` ${String(sum(all.map((r) => r.non2xx))).padStart(9)} ${String(sum(all.map((r) => r.errors))).padStart(13)}`,
    );
  }
  log('');
  log(
    `p50 ratio (gateway / bare):        ${p50Ratio.toFixed(2)}  aim <= ${AIM_P50_RATIO}` +
      `  ${verdict(p50Ratio <= AIM_P50_RATIO)}`,
  );
  log(
    `throughput ratio (gateway / bare): ${throughputRatio.toFixed(2)}  aim >= ${AIM_THROUGHPUT_RATIO}` +
      `  ${verdict(throughputRatio >= AIM_THROUGHPUT_RATIO)}`,
  );
  log(
    `non-2xx statuses: gateway ${statusSummary([...runs.gateway.fixed, ...runs.gateway.closed])};` +
      ` bare ${statusSummary([...runs.bare.fixed, ...runs.bare.closed])}`,
  );
  log('');
  log('per round (fixed p50 / p99 ms, closed req/s):');
  for (let round = 0; round < ROUNDS; round += 1) {
    const line = TARGET_NAMES.map((name) => {
      const fixed = runs[name].fixed[round] as LoadResult;
      const closed = runs[name].closed[round] as LoadResult;
      return `${name} ${fixed.p50Ms.toFixed(2)} / ${fixed.p99Ms.toFixed(2)}, ${closed.okPerSecond.toFixed(0)}`;
    }).join('   ');
    log(`  round ${round + 1}: ${line}`);
  }
  reportCpu(runs);
}

/**
 * Every 201 must have committed its intern, event, vault and icon (a request cut off when a run ended may
 * have committed without its 201 being counted, so there may be more rows, never fewer). Throws otherwise.
 */
async function checkRows(db: pg.Client, targets: Record<TargetName, Target>): Promise<void> {
  log('');
  log('rows after the run (interns / InternCreated events / vaults / icons) for the 201s counted:');
  const broken: string[] = [];
  for (const name of TARGET_NAMES) {
    const rows = await countRows(db, WORKSPACE_IDS[name]);
    const { created } = targets[name];
    const consistent = rows.events === rows.interns && rows.vaults === rows.interns && rows.icons === rows.interns;
    const ok = consistent && rows.interns >= created;
    log(
      `  ${name.padEnd(8)}${rows.interns} / ${rows.events} / ${rows.vaults} / ${rows.icons} for ${created} 201s` +
        `  ${ok ? `ok (${rows.interns - created} more: requests cut off at the end of a run)` : 'MISSING ROWS'}`,
    );
    if (!ok) broken.push(name);
  }
  if (broken.length > 0) throw new Error(`201s without their rows: ${broken.join(', ')}`);
}

async function benchmark(): Promise<void> {
  const startedAt = Date.now();
  let platform: Platform | null = null;
  let bare: ServiceProcess | null = null;
  let db: pg.Client | null = null;
  let nats: NatsConnection | null = null;
  try {
    log('starting the platform...');
    platform = await Platform.start();
    await platform.applyIdentities(IDENTITIES);
    throwIfInterrupted();
    log('starting the bare baseline...');
    bare = await startBare(platform);
    db = new pg.Client({ connectionString: platform.database.url, application_name: 'bench-create-check' });
    await db.connect();
    nats = await connect({ servers: platform.env.NATS_URL });
    const streamPrefix = `${(platform.env.NATS_PREFIX ?? '').replace(/[^A-Za-z0-9_-]/g, '_')}_`;
    const backlog: Backlog = { db, jsm: await jetstreamManager(nats), streamPrefix };

    const json = { 'content-type': 'application/json' };
    const targets: Record<TargetName, Target> = {
      gateway: {
        name: 'gateway',
        url: `${platform.gatewayUrl}/api/v1/interns`,
        headers: { ...json, authorization: `Bearer ${USER_KEY}` },
        body: bodies('g'),
        created: 0,
      },
      bare: { name: 'bare', url: `${bare.url}/interns`, headers: json, body: bodies('b'), created: 0 },
    };
    const answers = await compareAnswers(targets);

    for (const target of Object.values(targets)) {
      log(`warming up ${target.name} (${WARM_UP.durationSeconds} s)...`);
      await measure(target, WARM_UP);
      await settle(backlog);
    }

    const settling: number[] = [];
    const runs: Record<TargetName, TargetRuns> = {
      gateway: { fixed: [], closed: [], cpuMs: new Map() },
      bare: { fixed: [], closed: [], cpuMs: new Map() },
    };
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const [mode, options] of [
        ['fixed', FIXED_RATE],
        ['closed', CLOSED_LOOP],
      ] as const) {
        for (const target of [targets.gateway, targets.bare]) {
          log(`round ${round}/${ROUNDS}: ${target.name}, ${mode === 'fixed' ? 'fixed rate' : 'closed loop'}...`);
          const before = mode === 'closed' ? await cpuSnapshot(platform, bare, db) : null;
          runs[target.name][mode].push(await measure(target, options));
          // The CPU the relay, analytics and webhooks spent on the run's creates after it ended counts too.
          settling.push(await settle(backlog));
          if (before !== null) addCpu(runs[target.name].cpuMs, before, await cpuSnapshot(platform, bare, db));
        }
      }
    }
    report(runs, answers);
    await checkRows(db, targets);
    log('');
    const slowest = Math.max(...settling);
    log(
      `after each run, its events were relayed and consumed within ${slowest} ms` +
        `${slowest >= SETTLE_TIMEOUT_MS ? ' (TIMED OUT: background work spilled into the next run)' : ''};` +
        ` whole benchmark ${((Date.now() - startedAt) / 1000).toFixed(0)} s`,
    );
  } finally {
    await nats?.close().catch(() => undefined);
    await db?.end().catch(() => undefined);
    await bare?.stop('SIGTERM').catch(() => bare?.kill());
    await platform?.stop();
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => interruption.abort());
}

benchmark().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`create benchmark failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
