import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pg from 'pg';
import { freePort, Platform, type ServiceProcess, startServiceProcess } from '@interns/testing';
import { benchIdentities, log, provisionScriptedIntern, runBenchmark, sleep, throwIfInterrupted, withTimeout } from '../shared/bench-kit';
import { type CapturedAnswer, NODE_MANAGED_HEADERS } from './bare-sse-server';
import { chatTurn, type TurnTarget, turnTarget, type TurnTiming } from './turn-client';
import { TurnObserver } from './turn-observer';
import { type PlatformTurns, report } from './turn-report';

/**
 * `npm run bench:chat-turn`: one whole chat turn, `/say hi` on the scripted model, through the real platform
 * (gateway -> NATS -> runs -> PostgreSQL and JetStream, lifecycle for the intern lookup), against a bare
 * node:http process that answers the same POST with the same headers and the very SSE bytes the platform sent
 * for one such turn. Sequential turns, interleaved between the two, timed from outside: response headers,
 * first content chunk, `[DONE]`. Then where the platform's time goes, from NATS observers on the same broker.
 * Prints figures and exits 0; exits 1 only when the benchmark itself breaks.
 *
 * BENCH_VARIANT_ENV (a JSON object of settings) starts a second platform with those settings on top and
 * interleaves its turns too, for A/B experiments on a noisy machine, e.g. '{"PGOPTIONS":"-c synchronous_commit=off"}'.
 * BENCH_DUMP_FILE: writes every measured turn's moments (client and observer, ms) there as JSON.
 * BENCH_MODEL_DELAY_MS: the model takes that long to its first token, as a hosted model does (the scripted model's
 * `/sleep`, and the bare server waits as long before its events): what the platform adds to a time to first token.
 */

const USER_KEY = 'uk_bench_chat_turn';

const IDENTITIES = benchIdentities({ workspaceId: '5eed0000-0000-4000-8000-000000000003', userKey: USER_KEY });

const MODEL_DELAY_MS = Number(process.env.BENCH_MODEL_DELAY_MS ?? 0);
if (!Number.isInteger(MODEL_DELAY_MS) || MODEL_DELAY_MS < 0) throw new Error('BENCH_MODEL_DELAY_MS must be a whole number of ms');
const PROMPT = MODEL_DELAY_MS === 0 ? '/say hi' : `/sleep ${MODEL_DELAY_MS}\n/say hi`;
const EXPECTED_CONTENT = 'hi';
const CHAT_BODY = JSON.stringify({ stream: true, messages: [{ role: 'user', content: PROMPT }] });
const WARM_UP_TURNS = 30;
const TURNS = 200;
/** Idle time after each turn: one client's turns one after the other, not a closed loop at full speed. */
const TURN_GAP_MS = 10;
const PROBES = 100;
/** Issue 29: p50 over bare to the first content chunk and to `[DONE]`; p99 against p50. */
const AIMS = { firstChunkOverBareMs: 4, doneOverBareMs: 5, p99OverP50: 3 };
const RUNNING_TIMEOUT_MS = 30_000;
const TURN_TIMEOUT_MS = 10_000;

/** Every per-caller limit a few hundred turns a minute would reach, raised so nothing is refused. */
const PLATFORM_ENV: Record<string, string> = {
  CHAT_TURNS_PER_MINUTE: '1000000',
  MAX_RUNS_PER_INTERN: '64',
};
const VARIANT_ENV: Record<string, string> | null = process.env.BENCH_VARIANT_ENV ? JSON.parse(process.env.BENCH_VARIANT_ENV) : null;

function turn(target: TurnTarget, keepBody = false): Promise<TurnTiming> {
  throwIfInterrupted();
  return withTimeout(chatTurn(target, CHAT_BODY, EXPECTED_CONTENT, keepBody), TURN_TIMEOUT_MS, `a ${target.name} turn`);
}

/** The platform's answer as the bare server replays it: its headers (less node's own) and every body byte. */
function capture(timing: TurnTiming): CapturedAnswer {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(timing.headers)) {
    if (typeof value === 'string' && !NODE_MANAGED_HEADERS.has(name)) headers[name] = value;
  }
  return { headers, body: (timing.body as Buffer).toString('base64') };
}

async function startBare(answer: CapturedAnswer): Promise<ServiceProcess> {
  const port = await freePort();
  return startServiceProcess({
    entry: resolve('dist/bench/chat-turn/bare-sse-server.js'),
    port,
    env: { BARE_PORT: String(port), BARE_ANSWER: JSON.stringify(answer), BARE_DELAY_MS: String(MODEL_DELAY_MS) },
  });
}

/** A platform under test: its processes, its chat route, the observer of its NATS traffic, its turns. */
interface PlatformTarget {
  platform: Platform;
  target: TurnTarget;
  observer: TurnObserver;
  timings: TurnTiming[];
}

async function startPlatform(name: string, env: Record<string, string>, nc: (url: string) => Promise<NatsConnection>): Promise<PlatformTarget> {
  log(`starting the ${name}...${env === PLATFORM_ENV ? '' : ` (with ${JSON.stringify(VARIANT_ENV)})`}`);
  const platform = await Platform.start({ env });
  try {
    await platform.applyIdentities(IDENTITIES);
    throwIfInterrupted();
    log(`provisioning an intern on the ${name} (scripted model)...`);
    const internId = await provisionScriptedIntern(platform, USER_KEY, 'bench-chat-turn', {
      description: 'chat turn benchmark',
      timeoutMs: RUNNING_TIMEOUT_MS,
      pollMs: 50,
    });
    const connection = await nc(platform.env.NATS_URL as string);
    const observer = new TurnObserver(connection, platform.env.NATS_PREFIX as string);
    await connection.flush();
    const target = turnTarget(name, `${platform.gatewayUrl}/api/v1/interns/${internId}/chat/completions`, {
      authorization: `Bearer ${USER_KEY}`,
    });
    return { platform, target, observer, timings: [] };
  } catch (error) {
    await platform.stop();
    throw error;
  }
}

/** PostgreSQL as this process sees it on the platform's database: a round trip, and one commit (WAL flushed). */
async function probeDatabase(url: string): Promise<{ roundTrip: number[]; commit: number[] }> {
  const client = new pg.Client({ connectionString: url, application_name: 'bench-chat-turn-probe' });
  await client.connect();
  try {
    await client.query('CREATE TABLE IF NOT EXISTS public.bench_commit_probe (id bigserial PRIMARY KEY, at timestamptz NOT NULL)');
    const roundTrip: number[] = [];
    const commit: number[] = [];
    for (let i = 0; i < PROBES; i += 1) {
      throwIfInterrupted();
      let startedAt = performance.now();
      await client.query('SELECT 1');
      roundTrip.push(performance.now() - startedAt);
      startedAt = performance.now();
      await client.query('INSERT INTO public.bench_commit_probe (at) VALUES (now())');
      commit.push(performance.now() - startedAt);
      await sleep(TURN_GAP_MS);
    }
    return { roundTrip, commit };
  } finally {
    await client.end();
  }
}

async function benchmark(): Promise<void> {
  const platforms: PlatformTarget[] = [];
  let bare: ServiceProcess | null = null;
  let nc: NatsConnection | null = null;
  const natsConnection = async (url: string): Promise<NatsConnection> => {
    nc ??= await connect({ servers: url, name: 'bench-chat-turn' });
    return nc;
  };
  try {
    platforms.push(await startPlatform('platform', PLATFORM_ENV, natsConnection));
    if (VARIANT_ENV !== null) platforms.push(await startPlatform('variant', { ...PLATFORM_ENV, ...VARIANT_ENV }, natsConnection));
    const [first] = platforms as [PlatformTarget];

    log('capturing one platform answer...');
    const captured = capture(await turn(first.target, true));
    const answerBody = Buffer.from(captured.body, 'base64');
    const answerEvents = answerBody.toString('utf8').split('\n\n').filter((event) => event !== '').length;
    log('starting the bare SSE server...');
    bare = await startBare(captured);
    const viaBare = turnTarget('bare', `${bare.url}/chat/completions`, {});
    const identical = ((await turn(viaBare, true)).body as Buffer).equals(answerBody);
    const bareTimings: TurnTiming[] = [];
    const targets = [...platforms.map((p) => p.target), viaBare];
    const timingsOf = new Map<TurnTarget, TurnTiming[]>([...platforms.map((p) => [p.target, p.timings] as const), [viaBare, bareTimings]]);

    log(`warming up (${WARM_UP_TURNS} turns each)...`);
    for (let i = 0; i < WARM_UP_TURNS; i += 1) {
      for (const target of targets) await turn(target);
      // From the first turns on, the replies to the gateway's and runs' requests are observed too.
      if (i === 0 || i === WARM_UP_TURNS - 1) for (const p of platforms) await p.observer.followReplies();
      await sleep(TURN_GAP_MS);
    }

    log(`measuring (${TURNS} turns each, interleaved)...`);
    for (const p of platforms) p.observer.resetEvents();
    for (let i = 0; i < TURNS; i += 1) {
      // Each round starts with the next target, so none always follows the same one.
      const order = [...targets.slice(i % targets.length), ...targets.slice(0, i % targets.length)];
      for (const target of order) {
        (timingsOf.get(target) as TurnTiming[]).push(await turn(target));
        await sleep(TURN_GAP_MS);
      }
    }
    // The last turn's frames and acknowledgements are in before anything is read.
    await sleep(200);
    const measured: PlatformTurns[] = platforms.map((p) => ({
      name: p.target.name,
      timings: p.timings,
      observed: p.timings.map((timing) => p.observer.turn(timing.chunkId.replace(/^chatcmpl-/, ''), timing.runId)),
      integrationEvents: p.observer.integrationEvents,
    }));
    if (process.env.BENCH_DUMP_FILE) {
      const dump = measured.map((p) => ({ name: p.name, turns: p.timings.map((timing, i) => ({ ...timing, headers: undefined, body: undefined, ...p.observed[i] })) }));
      await writeFile(process.env.BENCH_DUMP_FILE, JSON.stringify({ platforms: dump, bare: bareTimings.map((t) => ({ ...t, headers: undefined, body: undefined })) }));
    }
    log('probing PostgreSQL (round trip, commit)...');
    const probes = await probeDatabase(first.platform.database.url);
    report({
      turns: TURNS,
      warmUpTurns: WARM_UP_TURNS,
      gapMs: TURN_GAP_MS,
      prompt: PROMPT,
      aims: AIMS,
      platforms: measured,
      bare: bareTimings,
      answer: { bytes: answerBody.length, events: answerEvents, identical },
      probes,
    });
  } finally {
    await (nc as NatsConnection | null)?.close().catch(() => undefined);
    await bare?.stop('SIGTERM').catch(() => bare?.kill());
    for (const p of platforms) await p.platform.stop();
  }
}

runBenchmark('chat turn', benchmark);
