// Longer than 300 lines on purpose: one benchmark reads best as one script (identities, the two receivers, the report).
import { type IncomingMessage, request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { createParser } from 'eventsource-parser';
import { decodeStreamFrame, subjectsFor } from '@interns/contracts';
import { Platform } from '@interns/testing';
import { benchIdentities, log, percentile, provisionScriptedIntern, runBenchmark, throwIfInterrupted, withTimeout } from '../shared/bench-kit';

/**
 * `npm run bench:chat`: what the gateway adds to each streamed chat chunk. One run streams 200 content
 * chunks; the bench process receives every chunk twice, straight from `runs.stream.>` on NATS (the
 * baseline: the moment the gateway could have it too) and as an SSE event through the gateway, and
 * takes the difference per chunk. Then the same with a second reader following the run through its stream
 * route (`GET .../runs/{id}/stream`, the run's chunk log in JetStream): what the chat client gets with it,
 * and what the second reader gets. Prints figures and exits 0; exits 1 only when the benchmark itself breaks.
 */

const USER_KEY = 'uk_bench_chat';

const IDENTITIES = benchIdentities({ workspaceId: '5eed0000-0000-4000-8000-000000000002', userKey: USER_KEY });

const CHUNKS = 200;
/** A pause after every chunk, so each is its own NATS message and SSE write rather than one burst. */
const PAUSE_MS = 5;
const WARM_UP_ROUNDS = 2;
const ROUNDS = 5;
const AIM_P50_MS = 1;
const RUNNING_TIMEOUT_MS = 30_000;
const ROUND_TIMEOUT_MS = 30_000;

/** Arrival times (performance.now()) of one round's chunks, keyed by chunk content. */
interface RoundArrivals {
  direct: Map<string, number>;
  sse: Map<string, number>;
  /** The second reader's (run stream route), in rounds that have one. */
  follower: Map<string, number> | null;
}

interface RoundResult {
  /** sse - direct, ms, one per chunk, in chunk order. */
  added: number[];
  directGaps: number[];
  sseGaps: number[];
  /** follower - direct, ms, in rounds with a second reader. */
  followerAdded: number[];
}

/** Chunk contents are unique per round (`r3-chunk-17`), so a stray chunk of another round never matches. */
function chunkKey(round: string, n: number): string {
  return `${round}-chunk-${n}`;
}

function scriptFor(round: string): string {
  const lines: string[] = [];
  for (let n = 1; n <= CHUNKS; n += 1) lines.push(`/say ${chunkKey(round, n)}`, `/sleep ${PAUSE_MS}`);
  return lines.join('\n');
}

/** The scripted model starts every piece after the first on a new line; the key is the text itself. */
function contentOf(chunkJson: string): string | null {
  const chunk = JSON.parse(chunkJson) as { choices?: { delta?: { content?: string } }[] };
  const content = chunk.choices?.[0]?.delta?.content;
  return typeof content === 'string' && content.trim() !== '' ? content.trim() : null;
}

/**
 * The baseline: every frame on `<prefix>.runs.stream.>`, time-stamped on arrival, recorded into the round
 * under way. `doneFor(round)` resolves when the stream that carried that round's chunks sent its done frame.
 */
class DirectSubscriber {
  private arrivals: Map<string, number> | null = null;
  private round = '';
  private roundSubject: string | null = null;
  private onDone: (() => void) | null = null;

  constructor(nc: NatsConnection, prefix: string) {
    nc.subscribe(subjectsFor(prefix).runs.stream('>'), {
      callback: (error, message) => {
        const at = performance.now();
        if (error || this.arrivals === null) return;
        const frame = decodeStreamFrame(message.data);
        if (frame?.kind === 'done' && message.subject === this.roundSubject) this.onDone?.();
        if (frame?.kind !== 'chunk' || frame.payload === null) return;
        const key = contentOf(Buffer.from(frame.payload).toString('utf8'));
        if (key === null || !key.startsWith(`${this.round}-`)) return;
        this.roundSubject = message.subject;
        this.arrivals.set(key, at);
      },
    });
  }

  begin(round: string, arrivals: Map<string, number>): Promise<void> {
    this.round = round;
    this.arrivals = arrivals;
    this.roundSubject = null;
    return new Promise((resolve) => (this.onDone = resolve));
  }

  end(): void {
    this.arrivals = null;
    this.onDone = null;
  }
}

/**
 * POSTs one chat prompt and records each content event's arrival: the time the socket data carrying it
 * reached the process (one read may carry several events), comparable with the NATS callback's stamp.
 */
function streamChat(
  url: string,
  prompt: string,
  round: string,
  arrivals: Map<string, number>,
  onRunId: (runId: string) => void = () => undefined,
): Promise<void> {
  const body = JSON.stringify({ stream: true, messages: [{ role: 'user', content: prompt }] });
  return readEvents(url, 'POST', body, round, arrivals, (incoming) => onRunId(String(incoming.headers['x-run-id'])));
}

/** A second reader of the run: its stream route from the first chunk on, recorded like the chat client's. */
function followRun(url: string, round: string, arrivals: Map<string, number>): Promise<void> {
  return readEvents(url, 'GET', null, round, arrivals, () => undefined);
}

function readEvents(
  url: string,
  method: 'GET' | 'POST',
  body: string | null,
  round: string,
  arrivals: Map<string, number>,
  onStart: (incoming: IncomingMessage) => void,
): Promise<void> {
  const headers: Record<string, string> = { authorization: `Bearer ${USER_KEY}` };
  if (body !== null) Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      url,
      { method, headers },
      (incoming) => {
        incoming.setEncoding('utf8');
        if (incoming.statusCode !== 200 || !(incoming.headers['content-type'] ?? '').startsWith('text/event-stream')) {
          let text = '';
          incoming.on('data', (part: string) => (text += part));
          incoming.on('end', () => reject(new Error(`${method} ${url} answered ${incoming.statusCode}: ${text}`)));
          return;
        }
        onStart(incoming);
        let readAt = 0;
        let sawDone = false;
        const parser = createParser({
          onEvent: (event) => {
            if (event.data === '[DONE]') {
              sawDone = true;
              return;
            }
            const key = contentOf(event.data);
            if (key !== null && key.startsWith(`${round}-`)) arrivals.set(key, readAt);
          },
        });
        incoming.on('data', (text: string) => {
          readAt = performance.now();
          parser.feed(text);
        });
        incoming.on('error', reject);
        incoming.on('end', () => (sawDone ? resolve() : reject(new Error('the stream ended without [DONE]'))));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body ?? undefined);
  });
}

async function streamRound(
  platform: Platform,
  internId: string,
  direct: DirectSubscriber,
  round: string,
  secondReader = false,
): Promise<RoundArrivals> {
  throwIfInterrupted();
  const arrivals: RoundArrivals = { direct: new Map(), sse: new Map(), follower: secondReader ? new Map() : null };
  const directDone = direct.begin(round, arrivals.direct);
  try {
    const internUrl = `${platform.gatewayUrl}/api/v1/interns/${internId}`;
    let followed: Promise<void> = Promise.resolve();
    const onRunId = (runId: string) => {
      if (arrivals.follower !== null) followed = followRun(`${internUrl}/runs/${runId}/stream`, round, arrivals.follower);
    };
    await withTimeout(
      Promise.all([streamChat(`${internUrl}/chat/completions`, scriptFor(round), round, arrivals.sse, onRunId), directDone]).then(() => followed),
      ROUND_TIMEOUT_MS,
      `stream ${round}`,
    );
  } finally {
    direct.end();
  }
  return arrivals;
}

/** Pairs the two sides chunk by chunk; a chunk missing on either side means the figures would lie. */
function compare(round: string, arrivals: RoundArrivals): RoundResult {
  const result: RoundResult = { added: [], directGaps: [], sseGaps: [], followerAdded: [] };
  const missing: string[] = [];
  let previous: { direct: number; sse: number } | null = null;
  for (let n = 1; n <= CHUNKS; n += 1) {
    const key = chunkKey(round, n);
    const direct = arrivals.direct.get(key);
    const sse = arrivals.sse.get(key);
    if (direct === undefined || sse === undefined) {
      missing.push(`${key} (${direct === undefined ? 'NATS' : 'SSE'})`);
      continue;
    }
    result.added.push(sse - direct);
    const followed = arrivals.follower?.get(key);
    if (arrivals.follower !== null) {
      if (followed === undefined) missing.push(`${key} (run stream)`);
      else result.followerAdded.push(followed - direct);
    }
    if (previous) {
      result.directGaps.push(direct - previous.direct);
      result.sseGaps.push(sse - previous.sse);
    }
    previous = { direct, sse };
  }
  if (missing.length > 0 || arrivals.direct.size !== CHUNKS || arrivals.sse.size !== CHUNKS) {
    throw new Error(
      `round ${round}: NATS saw ${arrivals.direct.size}, SSE saw ${arrivals.sse.size} of ${CHUNKS} chunks;` +
        ` missing ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? '...' : ''}`,
    );
  }
  return result;
}

const ms = (value: number) => value.toFixed(3).padStart(8);

function spread(values: number[]): string {
  return `${ms(percentile(values, 50))} ${ms(percentile(values, 99))} ${ms(Math.max(...values))} ${ms(Math.min(...values))}`;
}

function report(results: RoundResult[], withReader: RoundResult[]): void {
  const added = results.flatMap((r) => r.added);
  const directGaps = results.flatMap((r) => r.directGaps);
  const sseGaps = results.flatMap((r) => r.sseGaps);
  const p50 = percentile(added, 50);

  log('');
  log(
    `${ROUNDS} streams of ${CHUNKS} content chunks (${PAUSE_MS} ms apart) after ${WARM_UP_ROUNDS} warm-up streams;` +
      ` ${added.length} chunks matched on both sides`,
  );
  log('baseline: the arrival of each chunk at a direct subscriber of runs.stream.> in this process (0 ms)');
  log('');
  log('                                      p50 ms   p99 ms   max ms   min ms');
  log(`added per chunk (SSE - direct NATS) ${spread(added)}`);
  log(`inter-arrival, direct NATS          ${spread(directGaps)}`);
  log(`inter-arrival, SSE via gateway      ${spread(sseGaps)}`);
  log('');
  log(`added latency p50: ${p50.toFixed(3)} ms  aim < ${AIM_P50_MS} ms  ${p50 < AIM_P50_MS ? 'met' : 'MISSED'}`);
  // Negative figures are not a faster gateway: the baseline's own delivery jitter (broker, this event loop).
  const early = added.filter((value) => value < 0).length;
  log(`chunks that reached the SSE client before the direct subscriber: ${early} of ${added.length}`);
  log('');
  log('per stream (added p50 / p99 / max ms):');
  results.forEach((result, index) => {
    const figures = [50, 99].map((p) => percentile(result.added, p).toFixed(3));
    log(`  stream ${index + 1}: ${figures.join(' / ')} / ${Math.max(...result.added).toFixed(3)}`);
  });
  const addedWithReader = withReader.flatMap((r) => r.added);
  const followerAdded = withReader.flatMap((r) => r.followerAdded);
  log('');
  log(`with a second reader following each run (GET .../runs/{id}/stream), ${withReader.length} more streams:`);
  log('                                      p50 ms   p99 ms   max ms   min ms');
  log(`added per chunk (SSE - direct NATS) ${spread(addedWithReader)}`);
  log(`second reader (run stream - direct) ${spread(followerAdded)}`);
  log(`chat client p50 with / without the second reader: ${(percentile(addedWithReader, 50) / percentile(added, 50)).toFixed(2)}x`);
}

async function benchmark(): Promise<void> {
  let platform: Platform | null = null;
  let nc: NatsConnection | null = null;
  try {
    log('starting the platform...');
    platform = await Platform.start();
    await platform.applyIdentities(IDENTITIES);
    throwIfInterrupted();
    log('provisioning an intern (scripted model)...');
    const internId = await provisionScriptedIntern(platform, USER_KEY, 'bench-chat', {
      description: 'chat stream benchmark',
      timeoutMs: RUNNING_TIMEOUT_MS,
      pollMs: 50,
    });

    nc = await connect({ servers: platform.env.NATS_URL, name: 'bench-chat' });
    const direct = new DirectSubscriber(nc, platform.env.NATS_PREFIX as string);
    // The subscription must reach the server before the first chunk is published.
    await nc.flush();

    for (let round = 1; round <= WARM_UP_ROUNDS; round += 1) {
      log(`warm-up stream ${round}/${WARM_UP_ROUNDS}...`);
      compare(`w${round}`, await streamRound(platform, internId, direct, `w${round}`));
    }
    const results: RoundResult[] = [];
    for (let round = 1; round <= ROUNDS; round += 1) {
      log(`stream ${round}/${ROUNDS}...`);
      results.push(compare(`r${round}`, await streamRound(platform, internId, direct, `r${round}`)));
    }
    const withReader: RoundResult[] = [];
    for (let round = 1; round <= ROUNDS; round += 1) {
      log(`stream with a second reader ${round}/${ROUNDS}...`);
      withReader.push(compare(`f${round}`, await streamRound(platform, internId, direct, `f${round}`, true)));
    }
    report(results, withReader);
  } finally {
    await nc?.close().catch(() => undefined);
    await platform?.stop();
  }
}

runBenchmark('chat', benchmark);
