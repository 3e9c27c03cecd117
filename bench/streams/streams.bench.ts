// Longer than 300 lines on purpose: one benchmark reads best as one script (setup, the measured phases, the report).
import { resolve } from 'node:path';
import pg from 'pg';
import { freePort, Platform, type ServiceProcess, startServiceProcess } from '@interns/testing';
import { benchIdentities, interruption, log, percentile, provisionScriptedIntern, runBenchmark, sleep, throwIfInterrupted } from '../shared/bench-kit';
import { closeAll, type HeldStream, openStreams, type StreamTarget } from './stream-client';
import {
  CpuMeter,
  INSPECT_FLAG,
  InspectorGc,
  type LoopDelay,
  LoopDelayWindow,
  medianRssKiB,
  metric,
  scrapeMetrics,
} from './process-probe';

/**
 * `npm run bench:streams`: what an idle chat stream costs the gateway. Chat streams are opened through one
 * gateway process (each a scripted prompt that says one word, then sleeps far past the benchmark) and held open,
 * 1000, then 5000 at once; at each count the gateway's resident memory per stream and its event-loop delay are
 * compared with a bare `node:http` process holding as many SSE responses. The runs service, which holds the
 * other end of every stream, is read too. Prints figures and exits 0; exits 1 only when the benchmark broke.
 */

const USER_KEY = 'uk_bench_streams';

const IDENTITIES = benchIdentities({ workspaceId: '5eed0000-0000-4000-8000-000000000003', userKey: USER_KEY });

/**
 * Streams held at each measurement; each count is reached by opening more beside those already held.
 * BENCH_STREAMS_COUNTS (e.g. `200,1000`) replaces them for a quick look on a slow machine.
 */
const COUNTS = countsFrom(process.env.BENCH_STREAMS_COUNTS, [1000, 5000]);
/** Streams being opened at once. */
const OPEN_CONCURRENCY = 50;
/** The streams are spread over this many interns (round robin), so no intern's run lock or limiter row is hot. */
const INTERNS = 10;
/** Opened and closed on each target before anything is measured, so first-use allocations are not counted per stream. */
const WARM_UP_STREAMS = 100;
/** Says something (the stream is open), then sleeps far past the benchmark: the stream stays open and idle. */
const PROMPT = '/say open\n/sleep 600000';
const OPENED_WHEN = '"content":"open"';
/** After the last stream of a count opened, before memory is read. */
const SETTLE_MS = 2000;
/** The window over which the event-loop delay (and CPU use) is read while the streams are held. */
const LOOP_WINDOW_MS = 3000;
/** How long the gateway (and the bare process) get to let go of closed streams; longer breaks the benchmark. */
const RELEASE_TIMEOUT_MS = 60_000;
/** How long runs is given to record its runs' ends after the close before it is read anyway. */
const BESIDE_RELEASE_WAIT_MS = 10_000;
const RUNNING_TIMEOUT_MS = 60_000;
const AIM_RATIO = 2;

/**
 * The limits a chat caller meets long before 5000 open streams, lifted. The gateway's other per-caller limit,
 * RUN_STREAM_READERS_PER_CALLER, bounds the run stream route only, which this benchmark does not use.
 */
const PLATFORM_ENV: Record<string, string> = {
  MAX_RUNS_PER_INTERN: '100000',
  CHAT_TURNS_PER_MINUTE: '1000000',
  PROVISION_CONCURRENCY: String(INTERNS),
  PROVISION_CONCURRENCY_PER_WORKSPACE: String(INTERNS),
};
/** Analytics and webhooks hold no part of a stream; left out, the CPU they would spend on each run's events goes to opening. */
const SERVICES = ['lifecycle', 'runs', 'gateway'] as const;

type TargetName = 'gateway' | 'bare';

/** A process that holds one end of the streams, and how to read it. */
interface Holder {
  name: string;
  process: ServiceProcess;
  gc: InspectorGc | null;
  /** What it still holds (open streams, runs not yet recorded as ended), and what that count is. */
  remaining: () => Promise<number>;
  counts: string;
}

interface Target {
  name: TargetName;
  /** The process holding the client's end (first) and the processes holding the other end (runs). */
  holders: Holder[];
  streams: StreamTarget;
  /** Processes whose CPU use is counted while streams open and while they are held. */
  cpu: Map<string, number>;
}

/** Memory of one process: resident (median of several readings), V8 heap in use, libuv handles. */
interface MemoryReading {
  rssKiB: number;
  heapKiB: number;
  handles: number;
}

interface Phase {
  count: number;
  /** Opening this phase's new streams: wall time, and each one's time to its first content. */
  openElapsedMs: number;
  opened: number;
  openTimesMs: number[];
  /** CPU seconds per process while they opened. */
  openCpu: Map<string, number>;
  held: MemoryReading[];
  loop: LoopDelay;
  /** CPU seconds per process over the loop window. */
  heldCpu: Map<string, number>;
  endedEarly: number;
}

interface TargetRun {
  target: Target;
  idleLoop: LoopDelay;
  idleCpu: Map<string, number>;
  before: MemoryReading[];
  phases: Phase[];
  /** Per holder: ms from the close to letting go of everything (or to giving up, `left` still held), and the reading then. */
  released: { ms: number; left: number; reading: MemoryReading }[];
}

function countsFrom(raw: string | undefined, fallback: number[]): number[] {
  if (raw === undefined || raw.trim() === '') return fallback;
  const counts = raw.split(',').map((item) => Number(item.trim()));
  if (counts.some((count, i) => !Number.isInteger(count) || count < 1 || (i > 0 && count <= (counts[i - 1] as number)))) {
    throw new Error(`BENCH_STREAMS_COUNTS must be increasing positive integers, got "${raw}"`);
  }
  return counts;
}

const benchStartedAt = Date.now();

/** A progress line, stamped with the seconds since the benchmark started. */
function step(line: string): void {
  log(`[${String(Math.round((Date.now() - benchStartedAt) / 1000)).padStart(3)} s] ${line}`);
}

/** A holder whose metric `name` counts what it holds. */
function holderOf(name: string, process: ServiceProcess, metricName: string): Holder {
  const remaining = async () => metric(await scrapeMetrics(process.url), metricName);
  return { name, process, gc: InspectorGc.of(process.output()), remaining, counts: metricName };
}

/**
 * Runs counts a run out of `interns_runs_active` when it stops, before its end is recorded; the run is done with
 * when its row says so.
 */
function runsHolder(process: ServiceProcess, db: pg.Client): Holder {
  const remaining = async () => {
    const { rows } = await db.query<{ count: number }>(`SELECT count(*)::int AS count FROM runs.runs WHERE status IN ('running', 'awaiting_input')`);
    return (rows[0] as { count: number }).count;
  };
  return { name: 'runs', process, gc: InspectorGc.of(process.output()), remaining, counts: 'runs not recorded as ended' };
}

async function startBare(): Promise<ServiceProcess> {
  const port = await freePort();
  return startServiceProcess({ entry: resolve('dist/bench/streams/bare-sse-server.js'), port, env: { BARE_PORT: String(port) } });
}

async function readMemory(holder: Holder): Promise<MemoryReading> {
  await holder.gc?.collect();
  const rssKiB = await medianRssKiB(holder.process.pid);
  const samples = await scrapeMetrics(holder.process.url);
  return {
    rssKiB,
    heapKiB: metric(samples, 'nodejs_heap_size_used_bytes') / 1024,
    handles: metric(samples, 'nodejs_active_handles_total'),
  };
}

async function readAll(holders: Holder[]): Promise<MemoryReading[]> {
  const readings: MemoryReading[] = [];
  for (const holder of holders) readings.push(await readMemory(holder));
  return readings;
}

/** The event-loop delay of the target's first holder, and every watched process' CPU, over one window. */
async function watchLoop(target: Target): Promise<{ loop: LoopDelay; cpu: Map<string, number> }> {
  const cpu = await CpuMeter.start(target.cpu);
  const window = await LoopDelayWindow.open((target.holders[0] as Holder).process.url);
  await sleep(LOOP_WINDOW_MS);
  const { delay } = await window.close();
  return { loop: delay, cpu: await cpu.stop() };
}

/**
 * Waits until `holder` holds nothing: resolves to how long that took, or to null when it still held something
 * after `timeoutMs` (`required`: that breaks the benchmark).
 */
async function waitUntilReleased(holder: Holder, since: number, timeoutMs: number, required: boolean): Promise<{ ms: number; left: number }> {
  for (;;) {
    throwIfInterrupted();
    const left = await holder.remaining();
    if (left === 0) return { ms: Date.now() - since, left };
    if (Date.now() - since > timeoutMs) {
      if (!required) return { ms: Date.now() - since, left };
      throw new Error(`${holder.name} still holds ${left} (${holder.counts}) ${timeoutMs} ms after the close`);
    }
    await sleep(200);
  }
}

async function warmUp(target: Target): Promise<void> {
  const opened = await openStreams(target.streams, WARM_UP_STREAMS, OPEN_CONCURRENCY, interruption.signal);
  closeAll(opened.streams);
  const closedAt = Date.now();
  for (const holder of target.holders) await waitUntilReleased(holder, closedAt, RELEASE_TIMEOUT_MS, true);
}

async function openPhase(target: Target, held: HeldStream[], count: number): Promise<Phase> {
  const adding = count - held.length;
  step(`  opening ${adding} streams (${OPEN_CONCURRENCY} at a time) to hold ${count}...`);
  const cpu = await CpuMeter.start(target.cpu);
  let reported = 0;
  const opened = await openStreams(target.streams, adding, OPEN_CONCURRENCY, interruption.signal, (done) => {
    if (done - reported < 1000) return;
    reported = done;
    step(`    ${held.length + done} open`);
  });
  const openCpu = await cpu.stop();
  held.push(...opened.streams);
  step(`  ${count} open (${adding} in ${(opened.elapsedMs / 1000).toFixed(1)} s); settling, then reading memory and the event loop...`);
  await sleep(SETTLE_MS);
  throwIfInterrupted();
  const memory = await readAll(target.holders);
  const watched = await watchLoop(target);
  return {
    count,
    openElapsedMs: opened.elapsedMs,
    opened: adding,
    openTimesMs: opened.streams.map((stream) => stream.openMs),
    openCpu,
    held: memory,
    loop: watched.loop,
    heldCpu: watched.cpu,
    endedEarly: held.filter((stream) => stream.endedEarly()).length,
  };
}

async function runTarget(target: Target): Promise<TargetRun> {
  step(`${target.name}: warming up (${WARM_UP_STREAMS} streams), then reading it idle...`);
  await warmUp(target);
  const idle = await watchLoop(target);
  const before = await readAll(target.holders);
  const held: HeldStream[] = [];
  try {
    const phases: Phase[] = [];
    for (const count of COUNTS) phases.push(await openPhase(target, held, count));
    step(`  closing all ${held.length}...`);
    closeAll(held.splice(0));
    const closedAt = Date.now();
    const released: TargetRun['released'] = [];
    for (const [index, holder] of target.holders.entries()) {
      // The client's end must come back; the other end (runs, recording each run's end) is read as it is by then.
      const { ms, left } = await waitUntilReleased(holder, closedAt, index === 0 ? RELEASE_TIMEOUT_MS : BESIDE_RELEASE_WAIT_MS, index === 0);
      released.push({ ms, left, reading: await readMemory(holder) });
    }
    return { target, idleLoop: idle.loop, idleCpu: idle.cpu, before, phases, released };
  } finally {
    closeAll(held);
  }
}

const perStream = (phase: Phase, before: MemoryReading[], index: number, key: 'rssKiB' | 'heapKiB') =>
  ((phase.held[index] as MemoryReading)[key] - (before[index] as MemoryReading)[key]) / phase.count;
const pad = (text: string, width: number) => text.padStart(width);
const delays = (loop: LoopDelay) => `${loop.p50.toFixed(2)} / ${loop.p99.toFixed(2)}`;
const corePercent = (cpuSeconds: number) => `${((cpuSeconds / (LOOP_WINDOW_MS / 1000)) * 100).toFixed(0)}%`;
const kib = (value: number) => value.toFixed(0);

function report(gateway: TargetRun, bare: TargetRun, gcNote: string): void {
  log('');
  log(`idle chat streams held through one gateway vs SSE responses held by a bare node:http process (${gcNote})`);
  log(`RSS: median of 5 VmRSS readings, ${SETTLE_MS / 1000} s after the last stream opened; per stream = (held - before) / N.`);
  log(`event-loop delay: prom-client's monitorEventLoopDelay over ${LOOP_WINDOW_MS / 1000} s while held, beyond its 10 ms interval.`);
  log('');
  log(`     N  gateway KiB/stream  bare KiB/stream   ratio  aim <= 2x ${pad('loop delay p50 / p99 ms: gateway', 33)} ${pad('bare', 14)}`);
  gateway.phases.forEach((phase, index) => {
    const barePhase = bare.phases[index] as Phase;
    const gatewayKiB = perStream(phase, gateway.before, 0, 'rssKiB');
    const bareKiB = perStream(barePhase, bare.before, 0, 'rssKiB');
    const ratio = gatewayKiB / bareKiB;
    log(
      `${pad(String(phase.count), 6)} ${pad(gatewayKiB.toFixed(1), 19)} ${pad(bareKiB.toFixed(1), 16)} ${pad(ratio.toFixed(2), 7)}` +
        `  ${(ratio <= AIM_RATIO ? 'met' : 'MISSED').padEnd(9)} ${pad(delays(phase.loop), 33)} ${pad(delays(barePhase.loop), 14)}`,
    );
  });
  log(`${'     0  (idle, before opening)'.padEnd(62)} ${pad(delays(gateway.idleLoop), 33)} ${pad(delays(bare.idleLoop), 14)}`);

  log('');
  log('memory, KiB (before -> held; per stream); heap = V8 heap in use; handles = libuv handles:');
  for (const run of [gateway, bare]) {
    run.target.holders.forEach((holder, index) => {
      const before = run.before[index] as MemoryReading;
      const figures = run.phases.map((phase) => {
        const held = phase.held[index] as MemoryReading;
        return (
          `N=${phase.count}: rss ${kib(held.rssKiB)} (${perStream(phase, run.before, index, 'rssKiB').toFixed(1)}/stream),` +
          ` heap ${kib(held.heapKiB)} (${perStream(phase, run.before, index, 'heapKiB').toFixed(1)}/stream), handles ${held.handles}`
        );
      });
      log(`  ${holder.name.padEnd(8)} before: rss ${kib(before.rssKiB)}, heap ${kib(before.heapKiB)}, handles ${before.handles}`);
      for (const line of figures) log(`  ${''.padEnd(8)} ${line}`);
      const released = run.released[index] as TargetRun['released'][number];
      const when =
        released.left === 0
          ? `let go of all within ${(released.ms / 1000).toFixed(1)} s`
          : `${released.left} ${holder.counts} ${(released.ms / 1000).toFixed(0)} s after the close`;
      log(
        `  ${''.padEnd(8)} all closed (${when}): rss ${kib(released.reading.rssKiB)},` +
          ` heap ${kib(released.reading.heapKiB)}, handles ${released.reading.handles}`,
      );
    });
  }

  log('');
  log('CPU (% of one core while held; ms per stream opened), and the open path:');
  for (const run of [gateway, bare]) {
    for (const phase of run.phases) {
      const held = [...phase.heldCpu.entries()].map(([name, seconds]) => `${name} ${corePercent(seconds)}`).join(', ');
      const opening = [...phase.openCpu.entries()].map(([name, seconds]) => `${name} ${((seconds * 1000) / phase.opened).toFixed(2)}`).join(', ');
      log(
        `  ${run.target.name.padEnd(8)} N=${phase.count}: held ${held}; opening ${opening};` +
          ` ${(phase.opened / (phase.openElapsedMs / 1000)).toFixed(0)} streams/s, time to first content p50` +
          ` ${percentile(phase.openTimesMs, 50).toFixed(0)} ms p99 ${percentile(phase.openTimesMs, 99).toFixed(0)} ms;` +
          ` ended while held: ${phase.endedEarly}`,
      );
    }
    const idle = [...run.idleCpu.entries()].map(([name, seconds]) => `${name} ${corePercent(seconds)}`).join(', ');
    log(`  ${run.target.name.padEnd(8)} idle (0 streams): ${idle}`);
  }
}

async function benchmark(): Promise<void> {
  let platform: Platform | null = null;
  let bare: ServiceProcess | null = null;
  let db: pg.Client | null = null;
  try {
    // Each service (and the bare server) opens its inspector on a free port of its own, so a GC can be asked for.
    process.env.SERVICE_NODE_ARGS = [process.env.SERVICE_NODE_ARGS ?? '', INSPECT_FLAG].join(' ').trim();
    step(`starting the platform (${SERVICES.join(', ')})...`);
    platform = await Platform.start({ env: PLATFORM_ENV, services: [...SERVICES] });
    await platform.applyIdentities(IDENTITIES);
    throwIfInterrupted();
    step(`provisioning ${INTERNS} interns (scripted model)...`);
    const started = platform;
    const provisioning = { description: 'streams benchmark', timeoutMs: RUNNING_TIMEOUT_MS, pollMs: 100, oneOfSeveral: true };
    const internIds = await Promise.all(
      Array.from({ length: INTERNS }, (_, i) => provisionScriptedIntern(started, USER_KEY, `bench-streams-${i + 1}`, provisioning)),
    );
    db = new pg.Client({ connectionString: platform.database.url, application_name: 'bench-streams' });
    await db.connect();
    step('starting the bare SSE server...');
    bare = await startBare();

    const body = JSON.stringify({ stream: true, messages: [{ role: 'user', content: PROMPT }] });
    const gatewayUrl = platform.gatewayUrl;
    const bareUrl = `${bare.url}/sse`;
    const gateway: Target = {
      name: 'gateway',
      holders: [
        holderOf('gateway', platform.process('gateway'), 'interns_chat_streams_active'),
        runsHolder(platform.process('runs'), db),
      ],
      streams: {
        url: (index) => `${gatewayUrl}/api/v1/interns/${internIds[index % internIds.length]}/chat/completions`,
        headers: { authorization: `Bearer ${USER_KEY}` },
        body: () => body,
        openedWhen: OPENED_WHEN,
      },
      cpu: new Map((['gateway', 'runs', 'lifecycle'] as const).map((name) => [name, started.process(name).pid])),
    };
    const bareTarget: Target = {
      name: 'bare',
      holders: [holderOf('bare', bare, 'bare_sse_streams_active')],
      streams: { url: () => bareUrl, headers: {}, body: () => body, openedWhen: OPENED_WHEN },
      cpu: new Map([['bare', bare.pid]]),
    };
    const holders = [...gateway.holders, ...bareTarget.holders];
    const gcNote = holders.every((holder) => holder.gc !== null)
      ? 'a full GC through the inspector before each memory reading'
      : `NO GC before readings: no inspector address from ${holders.filter((holder) => holder.gc === null).map((holder) => holder.name).join(', ')}`;

    // The bare process first: after the gateway's streams close, runs keeps recording their runs' ends for a while.
    const bareRun = await runTarget(bareTarget);
    const gatewayRun = await runTarget(gateway);
    report(gatewayRun, bareRun, gcNote);
    log('');
    const openingSeconds = gatewayRun.phases.reduce((sum, phase) => sum + phase.openElapsedMs, 0) / 1000;
    log(
      `whole run: ${((Date.now() - benchStartedAt) / 1000).toFixed(0)} s, of which opening the gateway's` +
        ` ${COUNTS[COUNTS.length - 1]} streams ${openingSeconds.toFixed(0)} s`,
    );
  } finally {
    await db?.end().catch(() => undefined);
    await bare?.stop('SIGTERM').catch(() => bare?.kill());
    await platform?.stop();
  }
}

runBenchmark('streams', benchmark);
