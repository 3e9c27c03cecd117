// Longer than 300 lines on purpose: one benchmark reads best as one script (identities, targets, rounds, the report).
import { resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { freePort, Platform, ServiceProcess, startServiceProcess } from '@interns/testing';
import { measureCpu } from '../shared/process-cpu';
import { LoadOptions, LoadResult, runLoad } from './load-generator';

/**
 * `npm run bench:list`: what `GET /api/v1/interns?limit=20` costs through the real system (gateway ->
 * NATS -> lifecycle -> PostgreSQL, each its own process) compared with a bare Fastify + pg process
 * running the same query, and with the floor of the split: a bare Fastify process forwarding over raw
 * nats.js to a raw queue subscriber running that query. Prints figures and CPU time per request per
 * process; exits 0 whatever they are, 1 only when the benchmark itself breaks.
 */

const WORKSPACE_ID = '5eed0000-0000-4000-8000-000000000001';
const ORGANIZATION_ID = 'bench';
const MEMBER_ID = 'bench-user';
const USER_KEY = 'uk_bench_list';
const INTERN_COUNT = 50;
const CREATE_CONCURRENCY = 5;
const PAGE = 20;

const IDENTITIES = {
  organizations: [{ id: ORGANIZATION_ID, name: 'Bench', programme: true, lifecycle_writes: true }],
  workspaces: [{ id: WORKSPACE_ID, organization_id: ORGANIZATION_ID, name: 'bench' }],
  members: [{ id: MEMBER_ID, organization_id: ORGANIZATION_ID, active: true }],
  api_keys: [
    { key: USER_KEY, kind: 'user', organization_id: ORGANIZATION_ID, workspace_id: WORKSPACE_ID, member_id: MEMBER_ID },
  ],
};

const WARM_UP: Pick<LoadOptions, 'connections' | 'durationSeconds'> = { connections: 10, durationSeconds: 4 };
const FIXED_RATE: Pick<LoadOptions, 'connections' | 'durationSeconds' | 'overallRate'> = {
  connections: 10,
  durationSeconds: 10,
  overallRate: 200,
};
const CLOSED_LOOP: Pick<LoadOptions, 'connections' | 'durationSeconds'> = { connections: 50, durationSeconds: 10 };
const ROUNDS = 2;

const AIM_P50_RATIO = 1.4;
const AIM_THROUGHPUT_RATIO = 0.45;

const TARGETS = ['gateway', 'floor', 'bare'] as const;
type TargetName = (typeof TARGETS)[number];

interface Target {
  name: TargetName;
  url: string;
  headers: Record<string, string>;
  /** The processes serving it, whose CPU time is counted per request. */
  pids: Record<string, number>;
}

interface TargetRuns {
  fixed: LoadResult[];
  closed: LoadResult[];
  /** Per closed-loop run: CPU ms per 2xx answer, per process and for the whole machine. */
  cpuPerRequest: Record<string, number>[];
}

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Aborted by Ctrl-C / SIGTERM so the finally block still tears everything down. */
const interruption = new AbortController();

function throwIfInterrupted(): void {
  if (interruption.signal.aborted) throw new Error('interrupted');
}

async function seedInterns(platform: Platform): Promise<void> {
  const names = Array.from({ length: INTERN_COUNT }, (_, i) => `bench-${String(i + 1).padStart(2, '0')}`);
  for (let start = 0; start < names.length; start += CREATE_CONCURRENCY) {
    throwIfInterrupted();
    const batch = names.slice(start, start + CREATE_CONCURRENCY);
    const answers = await Promise.all(
      batch.map((name) =>
        platform.api('/api/v1/interns', {
          token: USER_KEY,
          json: { name, description: `benchmark intern ${name}`, instructions: 'Answer briefly.' },
        }),
      ),
    );
    const refused = answers.find((answer) => answer.status !== 201);
    if (refused) throw new Error(`creating an intern answered ${refused.status}: ${refused.text}`);
  }
}

/** A baseline process from dist/bench/list, serving the benchmark's caller on a port of its own. */
async function startBaseline(platform: Platform, entry: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
  const port = await freePort();
  return startServiceProcess({
    entry: resolve(`dist/bench/list/${entry}`),
    port,
    env: {
      DATABASE_URL: platform.database.url,
      NATS_URL: platform.env.NATS_URL as string,
      BARE_PORT: String(port),
      BARE_WORKSPACE_ID: WORKSPACE_ID,
      BARE_ORGANIZATION_ID: ORGANIZATION_ID,
      BARE_MEMBER_ID: MEMBER_ID,
      ...env,
    },
  });
}

/** The comparison is only fair if all answer the same page; says so either way. */
async function compareAnswers(targets: Record<TargetName, Target>): Promise<string> {
  const [viaGateway, ...others] = await Promise.all(
    TARGETS.map(async (name) => {
      const target = targets[name];
      const response = await fetch(target.url, { headers: target.headers });
      if (response.status !== 200) {
        throw new Error(`${target.name} answered ${response.status}: ${await response.text()}`);
      }
      return (await response.json()) as { data: unknown[] };
    }),
  );
  if (viaGateway?.data.length !== PAGE) {
    throw new Error(`gateway listed ${viaGateway?.data.length} interns, expected ${PAGE}`);
  }
  return others.every((answer) => isDeepStrictEqual(viaGateway, answer)) ? 'identical' : 'DIFFERENT (comparison not like for like)';
}

async function measure(target: Target, options: Omit<LoadOptions, 'url' | 'headers'>): Promise<LoadResult> {
  throwIfInterrupted();
  const result = await runLoad({ url: target.url, headers: target.headers, ...options }, interruption.signal);
  throwIfInterrupted();
  return result;
}

/** A closed-loop run with the CPU time its processes (and the machine) spent per 2xx answer. */
async function measureClosed(target: Target, runs: TargetRuns): Promise<void> {
  const { result, cpuMs } = await measureCpu(target.pids, () => measure(target, CLOSED_LOOP));
  runs.closed.push(result);
  runs.cpuPerRequest.push(Object.fromEntries(Object.entries(cpuMs).map(([name, ms]) => [name, ms / Math.max(1, result.ok)])));
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
  /** Median over the closed-loop runs of CPU ms per request, per process and for the machine. */
  cpu: Record<string, number>;
}

function summarize(runs: TargetRuns): Summary {
  const processes = Object.keys(runs.cpuPerRequest[0] ?? {});
  return {
    p50: median(runs.fixed.map((r) => r.p50Ms)),
    p99: median(runs.fixed.map((r) => r.p99Ms)),
    throughput: median(runs.closed.map((r) => r.okPerSecond)),
    cpu: Object.fromEntries(processes.map((name) => [name, median(runs.cpuPerRequest.map((run) => run[name] ?? 0))])),
  };
}

const ms = (value: number) => value.toFixed(2).padStart(9);
const rps = (value: number) => value.toFixed(0).padStart(13);
const verdict = (met: boolean) => (met ? 'met' : 'MISSED');

function cpuLine(cpu: Record<string, number>): string {
  const processes = Object.entries(cpu).filter(([name]) => name !== 'machine');
  const shown = processes.map(([name, value]) => `${name} ${value.toFixed(3)}`).join(', ');
  return `${shown}; machine ${(cpu.machine ?? 0).toFixed(3)}`;
}

function report(runs: Record<TargetName, TargetRuns>, answers: string): void {
  const summary = Object.fromEntries(TARGETS.map((name) => [name, summarize(runs[name])])) as Record<TargetName, Summary>;
  const p50Ratio = summary.gateway.p50 / summary.bare.p50;
  const throughputRatio = summary.gateway.throughput / summary.bare.throughput;

  log('');
  log(`GET ?limit=${PAGE} over ${INTERN_COUNT} interns; median of ${ROUNDS} interleaved rounds; answers ${answers}`);
  log(
    `fixed rate: ${FIXED_RATE.overallRate} req/s, ${FIXED_RATE.connections} connections,` +
      ` ${FIXED_RATE.durationSeconds} s; closed loop: ${CLOSED_LOOP.connections} connections,` +
      ` ${CLOSED_LOOP.durationSeconds} s`,
  );
  log('');
  log('target      p50 ms    p99 ms   closed req/s   non-2xx   conn errors');
  for (const name of TARGETS) {
    const all = [...runs[name].fixed, ...runs[name].closed];
    log(
      `${name.padEnd(8)}${ms(summary[name].p50)} ${ms(summary[name].p99)} ${rps(summary[name].throughput)}` +
        ` ${String(sum(all.map((r) => r.non2xx))).padStart(9)} ${String(sum(all.map((r) => r.errors))).padStart(13)}`,
    );
  }
  log('');
  log('CPU ms per request (closed loop; "machine" is every core, load generator, broker and database included):');
  for (const name of TARGETS) log(`  ${name.padEnd(8)} ${cpuLine(summary[name].cpu)}`);
  log('');
  log(`p50 ratio (gateway / bare):        ${p50Ratio.toFixed(2)}  aim <= ${AIM_P50_RATIO}  ${verdict(p50Ratio <= AIM_P50_RATIO)}`);
  log(
    `throughput ratio (gateway / bare): ${throughputRatio.toFixed(2)}  aim >= ${AIM_THROUGHPUT_RATIO}` +
      `  ${verdict(throughputRatio >= AIM_THROUGHPUT_RATIO)}`,
  );
  log(
    `floor (raw NATS split) / bare:     p50 ${(summary.floor.p50 / summary.bare.p50).toFixed(2)},` +
      ` throughput ${(summary.floor.throughput / summary.bare.throughput).toFixed(2)};` +
      ` gateway / floor: p50 ${(summary.gateway.p50 / summary.floor.p50).toFixed(2)},` +
      ` throughput ${(summary.gateway.throughput / summary.floor.throughput).toFixed(2)}`,
  );
  log(`non-2xx statuses: ${TARGETS.map((name) => `${name} ${statusSummary([...runs[name].fixed, ...runs[name].closed])}`).join('; ')}`);
  log('');
  log('per round (fixed p50 / p99 ms, closed req/s):');
  for (let round = 0; round < ROUNDS; round += 1) {
    const line = TARGETS.map((name) => {
      const fixed = runs[name].fixed[round] as LoadResult;
      const closed = runs[name].closed[round] as LoadResult;
      return `${name} ${fixed.p50Ms.toFixed(2)} / ${fixed.p99Ms.toFixed(2)}, ${closed.okPerSecond.toFixed(0)}`;
    }).join('   ');
    log(`  round ${round + 1}: ${line}`);
  }
}

async function benchmark(): Promise<void> {
  let platform: Platform | null = null;
  const baselines: ServiceProcess[] = [];
  try {
    log('starting the platform...');
    platform = await Platform.start();
    await platform.applyIdentities(IDENTITIES);
    throwIfInterrupted();
    log(`creating ${INTERN_COUNT} interns through the API...`);
    await seedInterns(platform);
    log('starting the bare baseline and the floor...');
    const bare = await startBaseline(platform, 'bare-server.js');
    baselines.push(bare);
    const floorEnv = { FLOOR_SUBJECT: `${platform.env.NATS_PREFIX}.bench.floor.list` };
    const floorResponder = await startBaseline(platform, 'floor-responder.js', floorEnv);
    baselines.push(floorResponder);
    const floorGateway = await startBaseline(platform, 'floor-gateway.js', floorEnv);
    baselines.push(floorGateway);

    const targets: Record<TargetName, Target> = {
      gateway: {
        name: 'gateway',
        url: `${platform.gatewayUrl}/api/v1/interns?limit=${PAGE}`,
        headers: { authorization: `Bearer ${USER_KEY}` },
        pids: { gateway: platform.process('gateway').pid, lifecycle: platform.process('lifecycle').pid },
      },
      floor: {
        name: 'floor',
        url: `${floorGateway.url}/interns?limit=${PAGE}`,
        headers: {},
        pids: { 'floor-gateway': floorGateway.pid, 'floor-responder': floorResponder.pid },
      },
      bare: { name: 'bare', url: `${bare.url}/interns?limit=${PAGE}`, headers: {}, pids: { bare: bare.pid } },
    };
    const answers = await compareAnswers(targets);

    for (const target of Object.values(targets)) {
      log(`warming up ${target.name} (${WARM_UP.durationSeconds} s)...`);
      await measure(target, WARM_UP);
    }

    const emptyRuns = (): TargetRuns => ({ fixed: [], closed: [], cpuPerRequest: [] });
    const runs: Record<TargetName, TargetRuns> = { gateway: emptyRuns(), floor: emptyRuns(), bare: emptyRuns() };
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const target of Object.values(targets)) {
        log(`round ${round}/${ROUNDS}: ${target.name}, fixed rate...`);
        runs[target.name].fixed.push(await measure(target, FIXED_RATE));
      }
      for (const target of Object.values(targets)) {
        log(`round ${round}/${ROUNDS}: ${target.name}, closed loop...`);
        await measureClosed(target, runs[target.name]);
      }
    }
    report(runs, answers);
  } finally {
    for (const baseline of baselines.reverse()) await baseline.stop('SIGTERM').catch(() => baseline.kill());
    await platform?.stop();
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => interruption.abort());
}

benchmark().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`list benchmark failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
