import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { newEgressCaPem } from '@interns/egress-proxy';
import { freePort, type ServiceProcess, startServiceProcess } from '@interns/testing';
import { interruption, log, percentile, runBenchmark, sum, throwIfInterrupted } from '../shared/bench-kit';
import { machineBusyCpuMs } from '../shared/process-cpu';
import { type ProcessStats, readStats } from './control-server';
import { type Answer, closedLoop, DirectAgent, get, type LoopResult, type Target, TunnelAgent } from './egress-client';
import { BODY_BYTES } from './origin-server';
import { newOriginPki } from './test-pki';

/**
 * `npm run bench:egress`: what the egress proxy (libs/egress-proxy) adds to a 1 KiB HTTPS GET, against the same
 * request sent straight to the origin in the same run. Three processes: the origin (HTTPS on 127.0.0.1 under a
 * CA of the bench's own, keep-alive), the proxy (`EgressProxy.listenTcp`, its own process so that its CPU is read
 * alone) and this one, the client (Node https with a keep-alive agent, tunnelling via CONNECT or not). Two modes:
 *
 * - tunnelled: CONNECT to a host on the allow list; TLS end to end with the origin (the client trusts only the
 *   origin's CA), the proxy relays bytes;
 * - terminated: CONNECT to a host a secret is bound to; the proxy presents an egress CA leaf (the client trusts only
 *   the egress CA), reads each request, replaces the placeholder in `Authorization` and sends it on over its own
 *   TLS connection to the origin, which answers 403 unless it got the secret's value.
 *
 * Prints figures and exits 0 whatever they are; exits 1 only when the benchmark itself breaks.
 */

const TUNNEL_HOST = 'tunnel.bench.test';
const SECRET_HOST = 'api.bench.test';
const PLACEHOLDER = 'vault:bench_token:5d1f3a9c7e2b4806';
const SECRET_VALUE = 'bench-secret-value-0123456789abcdef';

/** Sequential requests per target and mode, direct and proxied taking turns. */
const LATENCY_REQUESTS = 2000;
const WARM_UP_REQUESTS = 300;
const WARM_UP_LOOP_MS = 1000;
/** Concurrent keep-alive clients (one connection each) in the throughput runs. */
const CLIENTS = 16;
const LOOP_MS = 3000;
const ROUNDS = 2;

const AIM_THROUGHPUT_RATIO = 0.5;

type ModeName = 'tunnelled' | 'terminated';

interface Mode {
  name: ModeName;
  /** The aim for the added p50, ms. */
  aimAddedP50Ms: number;
  direct: Target;
  proxied: Target;
}

/** What one target did in one mode. */
interface TargetRuns {
  latencies: number[];
  loops: LoopResult[];
  failures: Map<string, number>;
  /** CPU ms over the closed-loop runs, by process. */
  loopCpuMs: { proxy: number; origin: number; client: number; machine: number };
  /** Origin TLS connections accepted over the closed-loop runs. */
  originConnections: number;
}

interface ModeRuns {
  mode: Mode;
  direct: TargetRuns;
  proxied: TargetRuns;
  /** Proxy CPU ms over the sequential run (only the proxied requests reach it). */
  sequentialProxyCpuMs: number;
}

interface Children {
  origin: ServiceProcess;
  proxy: ServiceProcess;
}

const aborted = () => interruption.signal.aborted;

function newRuns(): TargetRuns {
  return { latencies: [], loops: [], failures: new Map(), loopCpuMs: { proxy: 0, origin: 0, client: 0, machine: 0 }, originConnections: 0 };
}

function countFailure(runs: TargetRuns, error: string, times = 1): void {
  runs.failures.set(error, (runs.failures.get(error) ?? 0) + times);
}

function clientCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

interface Snapshot {
  proxy: ProcessStats;
  origin: ProcessStats;
  client: number;
  machine: number;
}

async function snapshot(children: Children): Promise<Snapshot> {
  const [proxy, origin] = await Promise.all([readStats(children.proxy.url), readStats(children.origin.url)]);
  return { proxy, origin, client: clientCpuMs(), machine: machineBusyCpuMs() };
}

async function sequential(mode: Mode, requests: number, record: ModeRuns | null): Promise<void> {
  for (let i = 0; i < requests; i += 1) {
    if (i % 100 === 0) throwIfInterrupted();
    // Each pair starts with the other target than the last, so neither always follows the same one.
    const order = i % 2 === 0 ? (['direct', 'proxied'] as const) : (['proxied', 'direct'] as const);
    for (const which of order) {
      const answer: Answer = await get(mode[which], BODY_BYTES);
      if (record === null) continue;
      if (answer.ok) record[which].latencies.push(answer.ms);
      else countFailure(record[which], answer.error ?? '?');
    }
  }
}

async function loop(target: Target, runs: TargetRuns | null, children: Children, ms: number): Promise<void> {
  throwIfInterrupted();
  const before = runs === null ? null : await snapshot(children);
  const result = await closedLoop(target, CLIENTS, ms, BODY_BYTES, aborted);
  throwIfInterrupted();
  if (runs === null || before === null) return;
  const after = await snapshot(children);
  runs.loops.push(result);
  for (const [error, times] of result.errors) countFailure(runs, error, times);
  runs.loopCpuMs.proxy += after.proxy.cpuMs - before.proxy.cpuMs;
  runs.loopCpuMs.origin += after.origin.cpuMs - before.origin.cpuMs;
  runs.loopCpuMs.client += after.client - before.client;
  runs.loopCpuMs.machine += after.machine - before.machine;
  runs.originConnections += (after.origin.counters.connections ?? 0) - (before.origin.counters.connections ?? 0);
}

async function measureMode(mode: Mode, children: Children): Promise<ModeRuns> {
  const runs: ModeRuns = { mode, direct: newRuns(), proxied: newRuns(), sequentialProxyCpuMs: 0 };
  log(`${mode.name}: warming up (${WARM_UP_REQUESTS} sequential requests and ${WARM_UP_LOOP_MS / 1000} s of ${CLIENTS} clients each)...`);
  await sequential(mode, WARM_UP_REQUESTS, null);
  for (const target of [mode.direct, mode.proxied]) await loop(target, null, children, WARM_UP_LOOP_MS);

  log(`${mode.name}: latency, ${LATENCY_REQUESTS} sequential requests per target, interleaved...`);
  const before = await readStats(children.proxy.url);
  await sequential(mode, LATENCY_REQUESTS, runs);
  runs.sequentialProxyCpuMs = (await readStats(children.proxy.url)).cpuMs - before.cpuMs;

  for (let round = 1; round <= ROUNDS; round += 1) {
    const order = round % 2 === 1 ? (['direct', 'proxied'] as const) : (['proxied', 'direct'] as const);
    for (const which of order) {
      log(`${mode.name}: round ${round}/${ROUNDS}, ${which}, ${CLIENTS} clients closed loop ${LOOP_MS / 1000} s...`);
      await loop(mode[which], runs[which], children, LOOP_MS);
    }
  }
  return runs;
}

const fixed = (value: number, digits: number, width: number) => (Number.isFinite(value) ? value.toFixed(digits) : '-').padStart(width);
const verdict = (met: boolean) => (met ? 'PASS' : 'MISS');

function throughput(runs: TargetRuns): number {
  return sum(runs.loops.map((r) => r.ok)) / sum(runs.loops.map((r) => r.seconds));
}

function loopRequests(runs: TargetRuns): number {
  return Math.max(1, sum(runs.loops.map((r) => r.ok)));
}

function report(all: ModeRuns[]): void {
  log('');
  log(
    `GET /1k (${BODY_BYTES}-byte body) over HTTPS with keep-alive, origin and proxy each in its own process;` +
      ` latency: ${LATENCY_REQUESTS} sequential requests per target (direct and proxied taking turns);` +
      ` throughput: ${CLIENTS} clients closed loop, ${ROUNDS} x ${LOOP_MS / 1000} s per target`,
  );
  log('');
  log('mode        target      p50 ms   p99 ms     req/s   conns   CPU ms/req (closed loop): proxy  origin  client  machine');
  for (const runs of all) {
    for (const which of ['direct', 'proxied'] as const) {
      const target = runs[which];
      const perRequest = (ms: number) => ms / loopRequests(target);
      // Connections the agent opened over the whole mode (warm-up included): keep-alive holds them across requests.
      const connections = runs.mode[which].agent.connectionsOpened;
      log(
        `${(which === 'direct' ? runs.mode.name : '').padEnd(12)}${which.padEnd(8)}` +
          `${fixed(percentile(target.latencies, 50), 3, 10)}${fixed(percentile(target.latencies, 99), 3, 9)}` +
          `${fixed(throughput(target), 0, 10)}${String(connections).padStart(8)}` +
          `${which === 'direct' ? '-'.padStart(34) : fixed(perRequest(target.loopCpuMs.proxy), 3, 34)}` +
          `${fixed(perRequest(target.loopCpuMs.origin), 3, 8)}${fixed(perRequest(target.loopCpuMs.client), 3, 8)}` +
          `${fixed(perRequest(target.loopCpuMs.machine), 3, 9)}`,
      );
    }
  }
  log('');
  log('mode        added p50 ms   aim            added p99 ms   p50 ratio   throughput ratio   aim             proxy CPU ms/req (sequential, closed loop)');
  for (const runs of all) {
    const addedP50 = percentile(runs.proxied.latencies, 50) - percentile(runs.direct.latencies, 50);
    const addedP99 = percentile(runs.proxied.latencies, 99) - percentile(runs.direct.latencies, 99);
    const ratio = throughput(runs.proxied) / throughput(runs.direct);
    const sequentialCpu = runs.sequentialProxyCpuMs / Math.max(1, runs.proxied.latencies.length);
    const loopCpu = runs.proxied.loopCpuMs.proxy / loopRequests(runs.proxied);
    log(
      `${runs.mode.name.padEnd(12)}${fixed(addedP50, 3, 12)}   ${`<= ${runs.mode.aimAddedP50Ms} ms ${verdict(addedP50 <= runs.mode.aimAddedP50Ms)}`.padEnd(15)}` +
        `${fixed(addedP99, 3, 12)}${fixed(percentile(runs.proxied.latencies, 50) / percentile(runs.direct.latencies, 50), 2, 12)}` +
        `${fixed(ratio, 2, 19)}   ${`>= ${AIM_THROUGHPUT_RATIO} ${verdict(ratio >= AIM_THROUGHPUT_RATIO)}`.padEnd(16)}` +
        `${fixed(sequentialCpu, 3, 6)}, ${fixed(loopCpu, 3, 0)}`,
    );
  }
  log('');
  for (const runs of all) {
    const perRequest = (target: TargetRuns) => (target.originConnections / loopRequests(target)).toFixed(2);
    log(
      `${runs.mode.name}: origin TLS connections per request in the closed loop: direct ${perRequest(runs.direct)}, proxied ${perRequest(runs.proxied)};` +
        ` per round req/s: ${(['direct', 'proxied'] as const)
          .map((which) => `${which} ${runs[which].loops.map((r) => (r.ok / r.seconds).toFixed(0)).join(' / ')}`)
          .join(', ')}`,
    );
  }
  const failures = all.flatMap((runs) =>
    (['direct', 'proxied'] as const).flatMap((which) =>
      [...runs[which].failures].map(([error, times]) => `${runs.mode.name} ${which}: ${times} x ${error}`),
    ),
  );
  log(`failed requests (not a 200 with ${BODY_BYTES} bytes): ${failures.length === 0 ? 'none' : failures.join('; ')}`);
}

/** `scratch`: a directory of the bench's own, for the origin CA's file. */
async function startChildren(scratch: string): Promise<Children & { egressCaPem: string; originCaPem: string; originPort: number; proxyPort: number }> {
  const pki = await newOriginPki([TUNNEL_HOST, SECRET_HOST]);
  const egressCaPem = await newEgressCaPem('egress bench CA');
  const originCaFile = join(scratch, 'origin-ca.pem');
  await writeFile(originCaFile, pki.caPem);
  const [originPort, originControl, proxyPort, proxyControl] = [await freePort(), await freePort(), await freePort(), await freePort()];
  log('starting the origin and the proxy...');
  const origin = await startServiceProcess({
    entry: resolve('dist/bench/egress/origin-server.js'),
    port: originControl,
    env: {
      ORIGIN_CERT: pki.cert,
      ORIGIN_KEY: pki.key,
      ORIGIN_PORT: String(originPort),
      CONTROL_PORT: String(originControl),
      ORIGIN_AUTHORIZATION: `Bearer ${SECRET_VALUE}`,
    },
  });
  try {
    const proxy = await startServiceProcess({
      entry: resolve('dist/bench/egress/proxy-server.js'),
      port: proxyControl,
      env: {
        // The upstream leg trusts the origin like a public origin: through Node's root store (see proxy-server.ts).
        NODE_EXTRA_CA_CERTS: originCaFile,
        EGRESS_CA_PEM: egressCaPem,
        ORIGIN_PORT: String(originPort),
        PROXY_PORT: String(proxyPort),
        CONTROL_PORT: String(proxyControl),
        TUNNEL_HOST,
        SECRET_HOST,
        SECRET_PLACEHOLDER: PLACEHOLDER,
        SECRET_VALUE,
      },
    });
    return { origin, proxy, egressCaPem, originCaPem: pki.caPem, originPort, proxyPort };
  } catch (error) {
    await origin.stop('SIGTERM').catch(() => origin.kill());
    throw error;
  }
}

async function benchmark(): Promise<void> {
  const startedAt = Date.now();
  let children: Children | null = null;
  const agents: Array<DirectAgent | TunnelAgent> = [];
  const scratch = await mkdtemp(join(tmpdir(), 'bench-egress-'));
  try {
    const started = await startChildren(scratch);
    children = started;
    const { originCaPem, egressCaPem, originPort, proxyPort } = started;
    const agent = <T extends DirectAgent | TunnelAgent>(made: T): T => {
      agents.push(made);
      return made;
    };
    const modes: Mode[] = [
      {
        name: 'tunnelled',
        aimAddedP50Ms: 1,
        direct: { name: 'direct', agent: agent(new DirectAgent(CLIENTS, originCaPem)), host: TUNNEL_HOST, port: originPort, headers: {} },
        proxied: { name: 'proxied', agent: agent(new TunnelAgent(CLIENTS, originCaPem, proxyPort)), host: TUNNEL_HOST, port: originPort, headers: {} },
      },
      {
        name: 'terminated',
        aimAddedP50Ms: 3,
        direct: {
          name: 'direct',
          agent: agent(new DirectAgent(CLIENTS, originCaPem)),
          host: SECRET_HOST,
          port: originPort,
          headers: { authorization: `Bearer ${SECRET_VALUE}` },
        },
        // Trusts only the egress CA: the proxy must present its leaf, i.e. terminate TLS.
        proxied: {
          name: 'proxied',
          agent: agent(new TunnelAgent(CLIENTS, egressCaPem, proxyPort)),
          host: SECRET_HOST,
          port: originPort,
          headers: { authorization: `Bearer ${PLACEHOLDER}` },
        },
      },
    ];

    // Both paths must answer before anything is timed; through the terminated path a 200 means the value arrived.
    for (const mode of modes) {
      for (const which of ['direct', 'proxied'] as const) {
        const answer = await get(mode[which], BODY_BYTES);
        if (!answer.ok) throw new Error(`${mode.name} ${which}: the first request failed (${answer.error})`);
      }
    }

    const proxyBefore = await readStats(children.proxy.url);
    const all: ModeRuns[] = [];
    for (const mode of modes) all.push(await measureMode(mode, children));
    const proxyAfter = await readStats(children.proxy.url);
    const originAfter = await readStats(children.origin.url);

    report(all);
    const counter = (stats: ProcessStats, name: string) => stats.counters[name] ?? 0;
    log(
      `proxy log entries during the runs: allowed ${counter(proxyAfter, 'allowed') - counter(proxyBefore, 'allowed')},` +
        ` denied ${counter(proxyAfter, 'denied') - counter(proxyBefore, 'denied')}, failed ${counter(proxyAfter, 'failed') - counter(proxyBefore, 'failed')};` +
        ` secret values opened ${counter(proxyAfter, 'secretsOpened') - counter(proxyBefore, 'secretsOpened')};` +
        ` origin requests refused (403/404) ${counter(originAfter, 'refused')}`,
    );
    log(`whole benchmark ${((Date.now() - startedAt) / 1000).toFixed(0)} s`);
  } finally {
    for (const made of agents) made.destroy();
    await children?.proxy.stop('SIGTERM').catch(() => children?.proxy.kill());
    await children?.origin.stop('SIGTERM').catch(() => children?.origin.kill());
    await rm(scratch, { recursive: true, force: true });
  }
}

runBenchmark('egress', benchmark);
