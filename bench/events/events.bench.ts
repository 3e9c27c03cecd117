// Longer than 300 lines on purpose: one benchmark reads best as one script (setup, the measured phases, the report).
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePort, Platform, type ServiceProcess, startServiceProcess } from '@interns/testing';
import { BENCH_MEMBER_ID, BENCH_ORGANIZATION_ID, benchIdentities, interruption, log, median, percentile, runBenchmark, sleep, throwIfInterrupted } from '../shared/bench-kit';
import { CpuMeter, INSPECT_FLAG, InspectorGc, medianRssKiB, metric, scrapeMetrics } from '../streams/process-probe';
import { Arrivals, closeAll, openSubscribers, type Subscriber, type SubscriberTarget } from './subscribers';

/**
 * `npm run bench:events`: one workspace event fanned out to 1000 subscribers of one gateway's `GET /api/v1/events`
 * (interface section 23), against a bare `node:http` process writing one SSE message to as many clients. Each event
 * is caused by an API call (the gateway: an intern created; the bare process: `POST /publish`); the delay is from
 * the event's own `created_at` to its arrival at each subscriber. Also the RSS each subscriber costs the process
 * holding it. Prints figures and ratios and exits 0; exits 1 only when the benchmark broke.
 */

const USER_KEY = 'uk_bench_events';
const WORKSPACE_ID = '5eed0000-0000-4000-8000-000000000029';
const IDENTITIES = benchIdentities({ workspaceId: WORKSPACE_ID, userKey: USER_KEY });

const SUBSCRIBERS = 1000;
/** Subscribers being opened at once. */
const OPEN_CONCURRENCY = 50;
/** Opened, sent a few events and closed on each target before anything is measured (first-use allocations). */
const WARM_UP_SUBSCRIBERS = 50;
const WARM_UP_EVENTS = 3;
/** Fanned out to all subscribers before the measured events: the first fan-out's allocations are not timed. */
const HELD_WARM_UP_EVENTS = 2;
/** Measured events: each round sends this many per target, the targets' order swapped every round. */
const ROUNDS = 4;
const EVENTS_PER_ROUND = 6;
/** Between one event reaching every subscriber and the next one's cause: the processes go quiet in between. */
const PAUSE_MS = 200;
/** An event not at every subscriber by then is counted missing at those it did not reach. */
const DELIVERY_TIMEOUT_MS = 15_000;
/** After the last subscriber opened, before memory is read. */
const SETTLE_MS = 2000;
const RELEASE_TIMEOUT_MS = 30_000;

/**
 * One caller (the bench member's user key) holds all 1000 streams: its per-gateway bound, EVENT_STREAMS_PER_CALLER
 * (8 by default), is raised to exactly the subscriber count. Each gateway event creates an intern: the 29 of a run
 * stay under the workspace's bound (MAX_INTERNS_PER_WORKSPACE, 100).
 */
const PLATFORM_ENV: Record<string, string> = { EVENT_STREAMS_PER_CALLER: String(SUBSCRIBERS) };
/**
 * The gateway's feed sources lifecycle's and runs' integration event streams (runs is started so its stream
 * exists, as in a deployment); analytics and webhooks have no part in the path.
 */
const SERVICES = ['lifecycle', 'runs', 'gateway'] as const;

type TargetName = 'gateway' | 'bare';

interface Target {
  name: TargetName;
  /** The process holding the subscribers and writing the events to them. */
  process: ServiceProcess;
  gc: InspectorGc | null;
  /** Its metric of the event streams it holds. */
  heldMetric: string;
  subscribe: SubscriberTarget;
  /** Sends the API call that causes one event; resolves to the event's key (`Arrivals`) once it was answered. */
  cause: (n: number) => Promise<string>;
}

interface MemoryReading {
  rssKiB: number;
  heapKiB: number;
}

/** One event's delivery: delays in ms at each subscriber that got it. */
interface EventDelivery {
  round: number;
  /** From the event's `created_at` to the arrival. */
  fromCreated: number[];
  /** From sending the API call that caused it to the arrival (one clock: the bench's). */
  fromRequest: number[];
  /** The causing call's round trip. */
  responseMs: number;
  missing: number;
}

interface TargetRun {
  target: Target;
  subscribers: Subscriber[];
  openMs: number;
  before: MemoryReading;
  held: MemoryReading;
  events: EventDelivery[];
  /** CPU seconds of the holding process over the measured events, from each cause to the last arrival. */
  cpuSeconds: number;
  /** Subscribers the target had ended while they were held, counted when they were closed. */
  endedEarly: number;
  released?: { ms: number; reading: MemoryReading };
}

const benchStartedAt = Date.now();

/** A progress line, stamped with the seconds since the benchmark started. */
function step(line: string): void {
  log(`[${String(Math.round((Date.now() - benchStartedAt) / 1000)).padStart(3)} s] ${line}`);
}

async function startBare(): Promise<ServiceProcess> {
  const port = await freePort();
  return startServiceProcess({ entry: resolve('dist/bench/events/fanout-server.js'), port, env: { BARE_PORT: String(port) } });
}

async function readMemory(target: Target): Promise<MemoryReading> {
  await target.gc?.collect();
  const rssKiB = await medianRssKiB(target.process.pid);
  const samples = await scrapeMetrics(target.process.url);
  return { rssKiB, heapKiB: metric(samples, 'nodejs_heap_size_used_bytes') / 1024 };
}

const held = async (target: Target) => metric(await scrapeMetrics(target.process.url), target.heldMetric);

/** Waits until the target holds `count` streams (its own metric); resolves to how long that took. */
async function waitUntilHolding(target: Target, count: number, timeoutMs: number): Promise<number> {
  const since = Date.now();
  for (;;) {
    throwIfInterrupted();
    const holding = await held(target);
    if (holding === count) return Date.now() - since;
    if (Date.now() - since > timeoutMs) throw new Error(`${target.name} holds ${holding} event streams, not ${count}, ${timeoutMs} ms on`);
    await sleep(100);
  }
}

/** Causes one event and waits until it reached `count` subscribers (or the timeout); one that reached none breaks the run. */
async function deliverOne(target: Target, arrivals: Arrivals, n: number, count: number, round: number): Promise<EventDelivery> {
  // The bench's wall clock with performance.now()'s resolution, anchored afresh for every event (no drift).
  const anchor = Date.now() - performance.now();
  const sentAt = performance.now();
  const key = await target.cause(n);
  const responseMs = performance.now() - sentAt;
  const delivery = await arrivals.waitFor(key, count, DELIVERY_TIMEOUT_MS);
  if (delivery === null) throw new Error(`${target.name}: event ${key} reached no subscriber within ${DELIVERY_TIMEOUT_MS} ms`);
  return {
    round,
    fromCreated: delivery.arrivals.map((at) => anchor + at - delivery.createdAtMs),
    fromRequest: delivery.arrivals.map((at) => at - sentAt),
    responseMs,
    missing: count - delivery.arrivals.length,
  };
}

async function warmUp(target: Target, arrivals: Arrivals, next: () => number): Promise<void> {
  const opened = await openSubscribers(target.subscribe, arrivals, WARM_UP_SUBSCRIBERS, OPEN_CONCURRENCY, interruption.signal);
  try {
    await waitUntilHolding(target, WARM_UP_SUBSCRIBERS, RELEASE_TIMEOUT_MS);
    for (let i = 0; i < WARM_UP_EVENTS; i += 1) {
      await deliverOne(target, arrivals, next(), WARM_UP_SUBSCRIBERS, 0);
      await sleep(PAUSE_MS);
    }
  } finally {
    closeAll(opened.subscribers);
  }
  await waitUntilHolding(target, 0, RELEASE_TIMEOUT_MS);
}

/** Warms the target up, reads it with nothing held, opens the 1000 subscribers and reads it again. */
async function open(target: Target, arrivals: Arrivals, next: () => number): Promise<TargetRun> {
  step(`${target.name}: warming up (${WARM_UP_SUBSCRIBERS} subscribers, ${WARM_UP_EVENTS} events), then reading it with none held...`);
  await warmUp(target, arrivals, next);
  const before = await readMemory(target);
  step(`${target.name}: opening ${SUBSCRIBERS} subscribers (${OPEN_CONCURRENCY} at a time)...`);
  const opened = await openSubscribers(target.subscribe, arrivals, SUBSCRIBERS, OPEN_CONCURRENCY, interruption.signal);
  try {
    await waitUntilHolding(target, SUBSCRIBERS, RELEASE_TIMEOUT_MS);
    step(`${target.name}: ${SUBSCRIBERS} open in ${(opened.elapsedMs / 1000).toFixed(1)} s; settling, then reading memory...`);
    await sleep(SETTLE_MS);
    const withAll = await readMemory(target);
    return { target, subscribers: opened.subscribers, openMs: opened.elapsedMs, before, held: withAll, events: [], cpuSeconds: 0, endedEarly: 0 };
  } catch (error) {
    // Not yet a run the caller would close: its subscribers go here.
    closeAll(opened.subscribers);
    throw error;
  }
}

async function measureEvent(run: TargetRun, arrivals: Arrivals, n: number, round: number): Promise<void> {
  const cpu = await CpuMeter.start(new Map([[run.target.name, run.target.process.pid]]));
  const delivery = await deliverOne(run.target, arrivals, n, SUBSCRIBERS, round);
  run.cpuSeconds += (await cpu.stop()).get(run.target.name) as number;
  run.events.push(delivery);
  await sleep(PAUSE_MS);
}

async function close(run: TargetRun): Promise<void> {
  run.endedEarly = run.subscribers.filter((subscriber) => subscriber.endedEarly()).length;
  closeAll(run.subscribers.splice(0));
  const closedAt = Date.now();
  await waitUntilHolding(run.target, 0, RELEASE_TIMEOUT_MS);
  run.released = { ms: Date.now() - closedAt, reading: await readMemory(run.target) };
}

const all = (run: TargetRun, key: 'fromCreated' | 'fromRequest') => run.events.flatMap((event) => event[key]);
const ms = (value: number) => value.toFixed(2);
const pad = (text: string, width: number) => text.padStart(width);
const perSubscriber = (run: TargetRun, key: keyof MemoryReading) => (run.held[key] - run.before[key]) / SUBSCRIBERS;
const firstOf = (event: EventDelivery) => Math.min(...event.fromCreated);
const lastOf = (event: EventDelivery) => Math.max(...event.fromCreated);

function report(gateway: TargetRun, bare: TargetRun, gcNote: string): void {
  const runs = [gateway, bare];
  log('');
  log(
    `one event fanned out to ${SUBSCRIBERS} subscribers: GET /api/v1/events through one gateway vs a bare node:http SSE fan-out` +
      ` (bench/events/fanout-server.ts)`,
  );
  log(
    `gateway: all ${SUBSCRIBERS} streams held by one caller (the bench member's user key), EVENT_STREAMS_PER_CALLER raised to ` +
      `${SUBSCRIBERS}; each event caused by POST /api/v1/interns (its intern.created); bare: by POST /publish`,
  );
  log(
    `${ROUNDS * EVENTS_PER_ROUND} events per target in ${ROUNDS} interleaved rounds (after ${HELD_WARM_UP_EVENTS} warm-up events);` +
      ` delay = arrival at each subscriber - the event's created_at (1 ms resolution)`,
  );
  log('');
  log(`target      p50 ms    p99 ms    max ms   first p50   last p50   from request p50   call p50   missing`);
  for (const run of runs) {
    const delays = all(run, 'fromCreated');
    log(
      `${run.target.name.padEnd(8)} ${pad(ms(percentile(delays, 50)), 9)} ${pad(ms(percentile(delays, 99)), 9)} ${pad(ms(Math.max(...delays)), 9)}` +
        ` ${pad(ms(median(run.events.map(firstOf))), 11)} ${pad(ms(median(run.events.map(lastOf))), 10)}` +
        ` ${pad(ms(percentile(all(run, 'fromRequest'), 50)), 18)} ${pad(ms(median(run.events.map((event) => event.responseMs))), 10)}` +
        ` ${pad(String(run.events.reduce((sum, event) => sum + event.missing, 0)), 9)}`,
    );
  }
  const ratio = (key: 'p50' | 'p99') => {
    const p = key === 'p50' ? 50 : 99;
    return percentile(all(gateway, 'fromCreated'), p) / percentile(all(bare, 'fromCreated'), p);
  };
  log('');
  log(`delay ratio (gateway / bare): p50 ${ratio('p50').toFixed(2)}, p99 ${ratio('p99').toFixed(2)}`);
  log(
    `per round p50 ms (gateway / bare): ` +
      Array.from({ length: ROUNDS }, (_, index) => {
        const of = (run: TargetRun) => percentile(run.events.filter((event) => event.round === index + 1).flatMap((event) => event.fromCreated), 50);
        return `${ms(of(gateway))} / ${ms(of(bare))}`;
      }).join(', '),
  );

  log('');
  log(`memory per subscriber, KiB: (with ${SUBSCRIBERS} open - before) / ${SUBSCRIBERS}; RSS the median of 5 VmRSS readings (${gcNote}):`);
  for (const run of runs) {
    const released = run.released;
    log(
      `  ${run.target.name.padEnd(8)} rss ${run.before.rssKiB.toFixed(0)} -> ${run.held.rssKiB.toFixed(0)} (${perSubscriber(run, 'rssKiB').toFixed(1)}/subscriber),` +
        ` heap ${run.before.heapKiB.toFixed(0)} -> ${run.held.heapKiB.toFixed(0)} (${perSubscriber(run, 'heapKiB').toFixed(1)}/subscriber)` +
        (released === undefined ? '' : `; all closed (let go within ${(released.ms / 1000).toFixed(1)} s): rss ${released.reading.rssKiB.toFixed(0)}`),
    );
  }
  log(`RSS per subscriber ratio (gateway / bare): ${(perSubscriber(gateway, 'rssKiB') / perSubscriber(bare, 'rssKiB')).toFixed(2)}`);

  log('');
  const cpuPerEvent = (run: TargetRun) => ((run.cpuSeconds * 1000) / run.events.length).toFixed(1);
  log(`CPU ms per event fanned out (the holding process, cause to last arrival): gateway ${cpuPerEvent(gateway)}, bare ${cpuPerEvent(bare)}`);
  log(
    `opening ${SUBSCRIBERS} subscribers: gateway ${(gateway.openMs / 1000).toFixed(1)} s, bare ${(bare.openMs / 1000).toFixed(1)} s;` +
      ` ended while held: gateway ${gateway.endedEarly}, bare ${bare.endedEarly}`,
  );
}

async function benchmark(): Promise<void> {
  let platform: Platform | null = null;
  let bare: ServiceProcess | null = null;
  const runs: TargetRun[] = [];
  try {
    // Each service (and the bare server) opens its inspector on a free port of its own, so a GC can be asked for.
    process.env.SERVICE_NODE_ARGS = [process.env.SERVICE_NODE_ARGS ?? '', INSPECT_FLAG].join(' ').trim();
    step(`starting the platform (${SERVICES.join(', ')})...`);
    platform = await Platform.start({ env: PLATFORM_ENV, services: [...SERVICES] });
    await platform.applyIdentities(IDENTITIES);
    throwIfInterrupted();
    step('starting the bare fan-out server...');
    bare = await startBare();
    const started = platform;
    const bareProcess = bare;

    const gateway: Target = {
      name: 'gateway',
      process: platform.process('gateway'),
      gc: InspectorGc.of(platform.process('gateway').output()),
      heldMetric: 'interns_event_stream_readers',
      subscribe: { url: `${platform.gatewayUrl}/api/v1/events`, headers: { authorization: `Bearer ${USER_KEY}` } },
      cause: async (n) => {
        const created = await started.api<{ id: string }>('/api/v1/interns', {
          token: USER_KEY,
          json: { name: `bench-events-${String(n).padStart(4, '0')}`, description: 'events benchmark' },
        });
        if (created.status !== 201) throw new Error(`creating an intern answered ${created.status}: ${created.text}`);
        return `intern.created:${created.body.id}`;
      },
    };
    const bareTarget: Target = {
      name: 'bare',
      process: bareProcess,
      gc: InspectorGc.of(bareProcess.output()),
      heldMetric: 'bare_event_streams_active',
      subscribe: { url: `${bareProcess.url}/events`, headers: {} },
      cause: async (n) => {
        // The data an intern.created carries, so the frame is about the size of the gateway's.
        const internId = randomUUID();
        const data = {
          intern_id: internId,
          organization_id: BENCH_ORGANIZATION_ID,
          workspace_id: WORKSPACE_ID,
          created_by: BENCH_MEMBER_ID,
          name: `bench-events-${String(n).padStart(4, '0')}`,
          description: 'events benchmark',
          model: 'local/scripted',
        };
        const published = await started.api('/publish', { baseUrl: bareProcess.url, json: { type: 'intern.created', workspace_id: WORKSPACE_ID, data } });
        if (published.status !== 200) throw new Error(`publishing answered ${published.status}: ${published.text}`);
        return `intern.created:${internId}`;
      },
    };
    const gcNote = [gateway, bareTarget].every((target) => target.gc !== null)
      ? 'after a full GC through the inspector'
      : `NO GC before readings: no inspector address from ${[gateway, bareTarget].filter((target) => target.gc === null).map((target) => target.name).join(', ')}`;

    const arrivals = new Arrivals();
    let counter = 0;
    const next = () => (counter += 1);
    const bareRun = await open(bareTarget, arrivals, next);
    runs.push(bareRun);
    const gatewayRun = await open(gateway, arrivals, next);
    runs.push(gatewayRun);

    step(`${HELD_WARM_UP_EVENTS} warm-up events each, then ${ROUNDS} rounds of ${EVENTS_PER_ROUND} events per target...`);
    for (const run of [bareRun, gatewayRun]) {
      for (let i = 0; i < HELD_WARM_UP_EVENTS; i += 1) {
        await deliverOne(run.target, arrivals, next(), SUBSCRIBERS, 0);
        await sleep(PAUSE_MS);
      }
    }
    for (let round = 1; round <= ROUNDS; round += 1) {
      const order = round % 2 === 1 ? [gatewayRun, bareRun] : [bareRun, gatewayRun];
      for (const run of order) {
        for (let i = 0; i < EVENTS_PER_ROUND; i += 1) {
          throwIfInterrupted();
          await measureEvent(run, arrivals, next(), round);
        }
      }
      step(`  round ${round} done`);
    }
    step('closing all subscribers...');
    for (const run of runs) await close(run);
    report(gatewayRun, bareRun, gcNote);
    log('');
    log(`whole run: ${((Date.now() - benchStartedAt) / 1000).toFixed(0)} s`);
  } finally {
    for (const run of runs) closeAll(run.subscribers);
    await bare?.stop('SIGTERM').catch(() => bare?.kill());
    await platform?.stop();
  }
}

runBenchmark('events', benchmark);
