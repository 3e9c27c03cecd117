import { resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { freePort, Platform, ServiceProcess, startServiceProcess } from '@interns/testing';
import { LoadOptions, LoadResult, runLoad } from './load-generator';

/**
 * `npm run bench:list`: what `GET /api/v1/interns?limit=20` costs through the real system (gateway ->
 * NATS -> lifecycle -> PostgreSQL, each its own process) compared with a bare Fastify + pg process
 * running the same query. Prints figures and exits 0; exits 1 only when the benchmark itself breaks.
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

const AIM_P50_RATIO = 1.5;
const AIM_THROUGHPUT_RATIO = 0.5;

type TargetName = 'gateway' | 'bare';

interface Target {
  name: TargetName;
  url: string;
  headers: Record<string, string>;
}

interface TargetRuns {
  fixed: LoadResult[];
  closed: LoadResult[];
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

async function startBare(platform: Platform): Promise<ServiceProcess> {
  const port = await freePort();
  return startServiceProcess({
    entry: resolve('dist/bench/list/bare-server.js'),
    port,
    env: {
      DATABASE_URL: platform.database.url,
      BARE_PORT: String(port),
      BARE_WORKSPACE_ID: WORKSPACE_ID,
      BARE_ORGANIZATION_ID: ORGANIZATION_ID,
      BARE_MEMBER_ID: MEMBER_ID,
    },
  });
}

/** The comparison is only fair if both answer the same page; says so either way. */
async function compareAnswers(gateway: Target, bare: Target): Promise<string> {
  const [viaGateway, viaBare] = await Promise.all(
    [gateway, bare].map(async (target) => {
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
  return isDeepStrictEqual(viaGateway, viaBare) ? 'identical' : 'DIFFERENT (comparison not like for like)';
}

async function measure(target: Target, options: Omit<LoadOptions, 'url' | 'headers'>): Promise<LoadResult> {
  throwIfInterrupted();
  const result = await runLoad({ url: target.url, headers: target.headers, ...options }, interruption.signal);
  throwIfInterrupted();
  return result;
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

function report(runs: Record<TargetName, TargetRuns>, answers: string): void {
  const gateway = summarize(runs.gateway);
  const bare = summarize(runs.bare);
  const p50Ratio = gateway.p50 / bare.p50;
  const throughputRatio = gateway.throughput / bare.throughput;
  const verdict = (met: boolean) => (met ? 'met' : 'MISSED');

  log('');
  log(`GET ?limit=${PAGE} over ${INTERN_COUNT} interns; median of ${ROUNDS} interleaved rounds; answers ${answers}`);
  log(
    `fixed rate: ${FIXED_RATE.overallRate} req/s, ${FIXED_RATE.connections} connections,` +
      ` ${FIXED_RATE.durationSeconds} s; closed loop: ${CLOSED_LOOP.connections} connections,` +
      ` ${CLOSED_LOOP.durationSeconds} s`,
  );
  log('');
  log('target      p50 ms    p99 ms   closed req/s   non-2xx   conn errors');
  for (const name of ['gateway', 'bare'] as const) {
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
    const line = (['gateway', 'bare'] as const)
      .map((name) => {
        const fixed = runs[name].fixed[round] as LoadResult;
        const closed = runs[name].closed[round] as LoadResult;
        return `${name} ${fixed.p50Ms.toFixed(2)} / ${fixed.p99Ms.toFixed(2)}, ${closed.okPerSecond.toFixed(0)}`;
      })
      .join('   ');
    log(`  round ${round + 1}: ${line}`);
  }
}

async function benchmark(): Promise<void> {
  let platform: Platform | null = null;
  let bare: ServiceProcess | null = null;
  try {
    log('starting the platform...');
    platform = await Platform.start();
    await platform.applyIdentities(IDENTITIES);
    throwIfInterrupted();
    log(`creating ${INTERN_COUNT} interns through the API...`);
    await seedInterns(platform);
    log('starting the bare baseline...');
    bare = await startBare(platform);

    const targets: Record<TargetName, Target> = {
      gateway: {
        name: 'gateway',
        url: `${platform.gatewayUrl}/api/v1/interns?limit=${PAGE}`,
        headers: { authorization: `Bearer ${USER_KEY}` },
      },
      bare: { name: 'bare', url: `${bare.url}/interns?limit=${PAGE}`, headers: {} },
    };
    const answers = await compareAnswers(targets.gateway, targets.bare);

    for (const target of Object.values(targets)) {
      log(`warming up ${target.name} (${WARM_UP.durationSeconds} s)...`);
      await measure(target, WARM_UP);
    }

    const runs: Record<TargetName, TargetRuns> = {
      gateway: { fixed: [], closed: [] },
      bare: { fixed: [], closed: [] },
    };
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const [mode, options] of [
        ['fixed', FIXED_RATE],
        ['closed', CLOSED_LOOP],
      ] as const) {
        for (const target of [targets.gateway, targets.bare]) {
          log(`round ${round}/${ROUNDS}: ${target.name}, ${mode === 'fixed' ? 'fixed rate' : 'closed loop'}...`);
          runs[target.name][mode].push(await measure(target, options));
        }
      }
    }
    report(runs, answers);
  } finally {
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
    process.stderr.write(`list benchmark failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
