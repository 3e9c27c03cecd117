import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { chunkIdOf, decodeStreamFrame, subjectsFor } from '@interns/contracts';
import type { ChatChunk, Question } from '@interns/contracts';
import { testNatsPrefix } from '@interns/testing';
import type { Ending } from './run-ending';
import { ensureRunChunkStream, RunChunkLog } from './run-chunk-log';
import { RunResponsePublisher } from './run-response.publisher';

/** A frame as the gateway reads it: its number, and the chunk (with its number in the run) for chunk frames. */
type Received = { seq: number; kind: 'chunk'; chunk: ChatChunk; eventId: number | null } | { seq: number; kind: 'heartbeat' | 'done' };

const question: Question = { kind: 'permission', operation: 'shell: ls', options: ['allow_once', 'reject_once'] };
const usage = { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 };

describe('RunResponsePublisher', () => {
  const subjects = subjectsFor(testNatsPrefix());
  let nc: NatsConnection;
  const subscriptions: Subscription[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
    await ensureRunChunkStream(nc, subjects, { runReplayRetentionMs: 60_000, executionDeadlineMs: 60_000, jetstreamMaxBytes: 1024 ** 2, jetstreamReplicas: 1 });
  });

  afterAll(async () => {
    for (const subscription of subscriptions) subscription.unsubscribe();
    if (nc) await (await jetstreamManager(nc)).streams.delete(subjects.runChunkStreamName);
    await nc?.close();
  });

  /** Everything published on `subject`, collected in order. */
  function collect(subject: string): Received[] {
    const received: Received[] = [];
    const subscription = nc.subscribe(subject, {
      callback: (_error, message) => {
        const frame = decodeStreamFrame(message.data);
        if (frame === null) throw new Error('undecodable frame');
        received.push(
          frame.kind === 'chunk'
            ? { seq: frame.seq, kind: 'chunk', chunk: JSON.parse(new TextDecoder().decode(frame.payload ?? undefined)) as ChatChunk, eventId: frame.eventId }
            : { seq: frame.seq, kind: frame.kind },
        );
      },
    });
    subscriptions.push(subscription);
    return received;
  }

  /**
   * A response on a fresh stream subject, read live (or not, `live: false`), writing to a run's chunk log;
   * `received` is what the live client got, `logged` what the log holds.
   */
  async function response(
    heartbeatMs = 60_000,
    options: { live?: boolean; log?: { log: RunChunkLog; logged: Received[] } } = {},
  ): Promise<{ publisher: RunResponsePublisher; received: Received[]; logged: Received[]; log: RunChunkLog }> {
    const streamId = randomUUID();
    const subject = subjects.runs.stream(streamId);
    const received = collect(subject);
    const logSubject = subjects.runs.chunks(randomUUID());
    const { log, logged } = options.log ?? { log: RunChunkLog.of(nc, logSubject), logged: collect(logSubject) };
    await nc.flush();
    const publisher = new RunResponsePublisher({
      chunkId: chunkIdOf(streamId),
      created: 1_800_000_000,
      model: 'local/scripted',
      sessionId: 'session-1',
      log,
      live: options.live === false ? null : { nc, subject, streamId, heartbeatMs },
    });
    return { publisher, received, logged, log };
  }

  /** What the client reads: each chunk's delta and finish, or its error, usage and session. */
  const reading = (received: Received[]) =>
    received.map((frame) => {
      if (frame.kind !== 'chunk') return frame.kind;
      const { choices, error, usage: reported, session_id } = frame.chunk;
      if (session_id !== undefined) return { final: session_id, usage: reported };
      if (error !== undefined) return { error: error.metadata?.reason, message: error.message, finish: choices[0].finish_reason };
      return { delta: choices[0].delta, finish: choices[0].finish_reason };
    });

  const settled = async (ms = 100) => {
    await nc.flush();
    await new Promise((resolve) => setTimeout(resolve, ms));
  };

  it('pauses on a question: the tool call, finish tool_calls, the final chunk without usage, [DONE]', async () => {
    const { publisher, received, logged, log } = await response();
    publisher.content('let me check');
    publisher.endWithQuestion('call_1', question);
    await log.flushed();
    await settled();
    expect(reading(received)).toEqual([
      { delta: { role: 'assistant' }, finish: null },
      { delta: { content: 'let me check' }, finish: null },
      {
        delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'service.provide_input', arguments: JSON.stringify(question) } }] },
        finish: null,
      },
      { delta: {}, finish: 'tool_calls' },
      { final: 'session-1', usage: null },
      'done',
    ]);
    expect(received.map((frame) => frame.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    // Each chunk carries its number in the run; the log holds the same chunks, numbered so, and no end yet.
    expect(received.map((frame) => (frame.kind === 'chunk' ? frame.eventId : null))).toEqual([1, 2, 3, 4, 5, null]);
    expect(logged.map((frame) => (frame.kind === 'chunk' ? [frame.seq, frame.chunk] : frame.kind))).toEqual(
      received.filter((frame) => frame.kind === 'chunk').map((frame) => (frame.kind === 'chunk' ? [frame.eventId, frame.chunk] : null)),
    );
  });

  it("numbers a run's responses on from one another in its log, read live or not, and ends the log with the run", async () => {
    const first = await response();
    first.publisher.endWithQuestion('call_1', question);
    const second = await response(60_000, { live: false, log: { log: first.log, logged: first.logged } });
    second.publisher.content('answered');
    second.publisher.endWithRun(null, { finish: 'stop' }, usage);
    await first.log.flushed();
    await settled();
    expect(second.received).toEqual([]);
    // Four chunks of the question's response, four of the answer's, then the run's end.
    expect(first.logged.map((frame) => frame.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(reading(first.logged).slice(4)).toEqual([
      { delta: { role: 'assistant' }, finish: null },
      { delta: { content: 'answered' }, finish: null },
      { delta: {}, finish: 'stop' },
      { final: 'session-1', usage },
      'done',
    ]);
  });

  it('ends a finished run with its finish, the final chunk with the run usage, [DONE]', async () => {
    const { publisher, received } = await response();
    publisher.endWithRun(null, { finish: 'length' }, usage);
    await settled();
    expect(reading(received)).toEqual([{ delta: { role: 'assistant' }, finish: null }, { delta: {}, finish: 'length' }, { final: 'session-1', usage }, 'done']);
  });

  it('ends a failed run with its error chunk', async () => {
    const { publisher, received } = await response();
    publisher.endWithRun(null, { finish: 'error', reason: 'configuration_error', message: 'no key' }, null);
    await settled();
    expect(reading(received).slice(1)).toEqual([{ error: 'configuration_error', message: 'no key', finish: 'error' }, { final: 'session-1', usage: null }, 'done']);
  });

  it('tells how a stopped run ended', async () => {
    const endings: [Ending, unknown][] = [
      [{ reason: 'intern_suspended', tell: 'run_ended' }, { error: 'run_ended', message: 'the intern was suspended; the run ended', finish: 'error' }],
      [{ reason: 'execution_deadline', tell: 'run_ended' }, { error: 'run_ended', message: 'the run reached its execution deadline', finish: 'error' }],
      [
        { reason: 'interaction_deadline', tell: 'run_ended', toolCallId: 'call_1' },
        { error: 'run_ended', message: 'the question was not answered in time; the run ended', finish: 'error' },
      ],
      [{ reason: 'owner_lost', tell: 'internal_error' }, { error: 'internal_error', message: 'the runs service stopped; the run did not finish', finish: 'error' }],
      [{ reason: 'caller_cancelled', tell: 'stop' }, { delta: {}, finish: 'stop' }],
    ];
    for (const [ending, last] of endings) {
      const { publisher, received } = await response();
      publisher.endWithRun(ending, { finish: 'stop' }, usage);
      await settled(20);
      expect(reading(received).slice(1)).toEqual([last, { final: 'session-1', usage }, 'done']);
    }
  });

  it("sends nothing more to a client that left, heartbeats included, while the log's readers learn the run stopped", async () => {
    const { publisher, received, logged } = await response(20);
    publisher.endWithRun({ reason: 'client_disconnected', tell: 'nothing' }, { finish: 'stop' }, usage);
    await settled(150);
    expect(reading(received)).toEqual([{ delta: { role: 'assistant' }, finish: null }]);
    expect(reading(logged).slice(1)).toEqual([{ delta: {}, finish: 'stop' }, { final: 'session-1', usage }, 'done']);
  });

  it('goes on in the log only once its client is detached (a background chat)', async () => {
    const { publisher, received, logged } = await response();
    publisher.content('before');
    publisher.detach();
    publisher.content('after');
    publisher.endWithRun(null, { finish: 'stop' }, null);
    await settled();
    expect(reading(received)).toEqual([{ delta: { role: 'assistant' }, finish: null }, { delta: { content: 'before' }, finish: null }]);
    expect(reading(logged).map((entry) => (typeof entry === 'object' && 'delta' in entry ? entry.delta : entry))).toEqual([
      { role: 'assistant' },
      { content: 'before' },
      { content: 'after' },
      {},
      { final: 'session-1', usage: null },
      'done',
    ]);
  });

  it('fills quiet stretches with numbered heartbeats until it ends', async () => {
    const { publisher, received } = await response(20);
    await settled(150);
    publisher.endWithRun(null, { finish: 'stop' }, null);
    await settled(20);
    const ended = received.length;
    await settled(150);
    expect(received.length).toBe(ended);
    const kinds = reading(received);
    expect(kinds.filter((kind) => kind === 'heartbeat').length).toBeGreaterThanOrEqual(1);
    expect(kinds.at(-1)).toBe('done');
    expect(received.map((frame) => frame.seq)).toEqual(received.map((_frame, index) => index + 1));
  });

  it('abandons a response without a word', async () => {
    const { publisher, received } = await response(20);
    publisher.content('partial');
    publisher.abandon();
    await settled(150);
    expect(reading(received)).toEqual([{ delta: { role: 'assistant' }, finish: null }, { delta: { content: 'partial' }, finish: null }]);
  });
});
