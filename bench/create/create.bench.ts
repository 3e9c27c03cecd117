// Over 300 lines: one benchmark script (setup, answer check, rounds, CPU accounting, row check, report) like list.bench.ts.
import { resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { INTEGRATION_EVENTS_CHECKPOINT } from '@interns/event-store';
import { freePort, Platform, PLATFORM_SERVICES, ServiceProcess, startServiceProcess } from '@interns/testing';
import { BENCH_MEMBER_ID, BENCH_ORGANIZATION_ID, interruption, log, runBenchmark, sum, throwIfInterrupted } from '../shared/bench-kit';
import { processCpuMs } from '../shared/process-cpu';
import { LoadOptions, LoadResult, runLoad } from '../list/load-generator';
import { LoadRuns, logAims, logLoadSettings, logRounds, logStatuses, logTargetTable, summarizeLoad } from '../list/load-report';

/**
 * `npm run bench:create`: what `POST /api/v1/interns` costs through the real system (gateway -> NATS ->
 * lifecycle -> PostgreSQL, each its own process) compared with a bare Fastify + pg process running the same
 * statements in one transaction. Every request creates an intern with a name of its own; afterwards every
 * 201 must have left its rows. Prints figures and exits 0; exits 1 only when the benchmark itself breaks.
 */

const USER_KEY = 'uk_bench_create';
/** Each target creates in a workspace of its own, in the same database, so the rows can be counted apart. */
const WORKSPACE_IDS = {
  gateway: '5eed0000-0000-4000-8000-0000000000c1',
  bare: '5eed0000-0000-4000-8000-0000000000c2',
} as const;

const IDENTITIES = {
  organizations: [{ id: BENCH_ORGANIZATION_ID, name: 'Bench', programme: true, lifecycle_writes: true }],
  workspaces: [
    { id: WORKSPACE_IDS.gateway, organization_id: BENCH_ORGANIZATION_ID, name: 'bench-gateway' },
    { id: WORKSPACE_IDS.bare, organization_id: BENCH_ORGANIZATION_ID, name: 'bench-bare' },
  ],
  members: [{ id: BENCH_MEMBER_ID, organization_id: BENCH_ORGANIZATION_ID, active: true }],
  api_keys: [
    {
      key: USER_KEY,
      kind: 'user',
      organization_id: BENCH_ORGANIZATION_ID,
      workspace_id: WORKSPACE_IDS.gateway,
      member_id: BENCH_MEMBER_ID,
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

interface TargetRuns extends LoadRuns {
  /** CPU ms per process over this target's closed-loop runs. */
  cpuMs: Map<string, number>;
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
      BARE_ORGANIZATION_ID: BENCH_ORGANIZATION_ID,
      BARE_MEMBER_ID: BENCH_MEMBER_ID,
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
  const summary = { gateway: summarizeLoad(runs.gateway), bare: summarizeLoad(runs.bare) };
  const reported = TARGET_NAMES.map((name) => ({ name, runs: runs[name], summary: summary[name] }));

  log('');
  log(`POST /interns, a new name each; median of ${ROUNDS} interleaved rounds; answers ${answers}`);
  logLoadSettings(FIXED_RATE, CLOSED_LOOP);
  log('');
  logTargetTable(reported);
  log('');
  logAims(summary.gateway, summary.bare, { p50Ratio: AIM_P50_RATIO, throughputRatio: AIM_THROUGHPUT_RATIO });
  logStatuses(reported);
  log('');
  logRounds(reported, ROUNDS);
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
    // One workspace takes every create: its tenant cap (section 22) would answer 409 long before the run ends.
    platform = await Platform.start({ env: { MAX_INTERNS_PER_WORKSPACE: '100000000' } });
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

runBenchmark('create', benchmark);
