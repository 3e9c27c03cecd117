import { resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { freePort, Platform, ServiceProcess, startServiceProcess } from '@interns/testing';
import { BENCH_MEMBER_ID, BENCH_ORGANIZATION_ID, benchIdentities, interruption, log, median, runBenchmark, throwIfInterrupted } from '../shared/bench-kit';
import { measureCpu } from '../shared/process-cpu';
import { LoadOptions, LoadResult, runLoad } from './load-generator';
import { LoadRuns, LoadSummary, logAims, logLoadSettings, logRounds, logStatuses, logTargetTable, summarizeLoad } from './load-report';

/**
 * `npm run bench:list`: what `GET /api/v1/interns?limit=20` costs through the real system (gateway ->
 * NATS -> lifecycle -> PostgreSQL, each its own process) compared with a bare Fastify + pg process
 * running the same query, and with the floor of the split: a bare Fastify process forwarding over raw
 * nats.js to a raw queue subscriber running that query. Prints figures and CPU time per request per
 * process; exits 0 whatever they are, 1 only when the benchmark itself breaks.
 */

const WORKSPACE_ID = '5eed0000-0000-4000-8000-000000000001';
const USER_KEY = 'uk_bench_list';
const INTERN_COUNT = 50;
const CREATE_CONCURRENCY = 5;
const PAGE = 20;

const IDENTITIES = benchIdentities({ workspaceId: WORKSPACE_ID, userKey: USER_KEY });

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

interface TargetRuns extends LoadRuns {
  /** Per closed-loop run: CPU ms per 2xx answer, per process and for the whole machine. */
  cpuPerRequest: Record<string, number>[];
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
      BARE_ORGANIZATION_ID: BENCH_ORGANIZATION_ID,
      BARE_MEMBER_ID: BENCH_MEMBER_ID,
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

interface Summary extends LoadSummary {
  /** Median over the closed-loop runs of CPU ms per request, per process and for the machine. */
  cpu: Record<string, number>;
}

function summarize(runs: TargetRuns): Summary {
  const processes = Object.keys(runs.cpuPerRequest[0] ?? {});
  return {
    ...summarizeLoad(runs),
    cpu: Object.fromEntries(processes.map((name) => [name, median(runs.cpuPerRequest.map((run) => run[name] ?? 0))])),
  };
}

function cpuLine(cpu: Record<string, number>): string {
  const processes = Object.entries(cpu).filter(([name]) => name !== 'machine');
  const shown = processes.map(([name, value]) => `${name} ${value.toFixed(3)}`).join(', ');
  return `${shown}; machine ${(cpu.machine ?? 0).toFixed(3)}`;
}

function report(runs: Record<TargetName, TargetRuns>, answers: string): void {
  const summary = Object.fromEntries(TARGETS.map((name) => [name, summarize(runs[name])])) as Record<TargetName, Summary>;
  const reported = TARGETS.map((name) => ({ name, runs: runs[name], summary: summary[name] }));

  log('');
  log(`GET ?limit=${PAGE} over ${INTERN_COUNT} interns; median of ${ROUNDS} interleaved rounds; answers ${answers}`);
  logLoadSettings(FIXED_RATE, CLOSED_LOOP);
  log('');
  logTargetTable(reported);
  log('');
  log('CPU ms per request (closed loop; "machine" is every core, load generator, broker and database included):');
  for (const name of TARGETS) log(`  ${name.padEnd(8)} ${cpuLine(summary[name].cpu)}`);
  log('');
  logAims(summary.gateway, summary.bare, { p50Ratio: AIM_P50_RATIO, throughputRatio: AIM_THROUGHPUT_RATIO });
  log(
    `floor (raw NATS split) / bare:     p50 ${(summary.floor.p50 / summary.bare.p50).toFixed(2)},` +
      ` throughput ${(summary.floor.throughput / summary.bare.throughput).toFixed(2)};` +
      ` gateway / floor: p50 ${(summary.gateway.p50 / summary.floor.p50).toFixed(2)},` +
      ` throughput ${(summary.gateway.throughput / summary.floor.throughput).toFixed(2)}`,
  );
  logStatuses(reported);
  log('');
  logRounds(reported, ROUNDS);
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

runBenchmark('list', benchmark);
