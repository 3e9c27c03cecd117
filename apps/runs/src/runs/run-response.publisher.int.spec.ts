import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { decodeStreamFrame, subjectsFor } from '@interns/contracts';
import type { ChatChunk, Question } from '@interns/contracts';
import { testNatsPrefix } from '@interns/testing';
import type { Ending } from './run-ending';
import { RunResponsePublisher } from './run-response.publisher';

/** A frame as the gateway reads it: its number, and the chunk for chunk frames. */
type Received = { seq: number; kind: 'chunk'; chunk: ChatChunk } | { seq: number; kind: 'heartbeat' | 'done' };

const question: Question = { kind: 'permission', operation: 'shell: ls', options: ['allow_once', 'reject_once'] };
const usage = { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 };

describe('RunResponsePublisher', () => {
  const subjects = subjectsFor(testNatsPrefix());
  let nc: NatsConnection;
  const subscriptions: Subscription[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
  });

  afterAll(async () => {
    for (const subscription of subscriptions) subscription.unsubscribe();
    await nc?.close();
  });

  /** A response on a fresh stream subject, with everything published on it collected in order. */
  async function response(heartbeatMs = 60_000): Promise<{ publisher: RunResponsePublisher; received: Received[] }> {
    const streamId = randomUUID();
    const subject = subjects.runs.stream(streamId);
    const received: Received[] = [];
    const subscription = nc.subscribe(subject, {
      callback: (_error, message) => {
        const frame = decodeStreamFrame(message.data);
        if (frame === null) throw new Error('undecodable frame');
        received.push(
          frame.kind === 'chunk'
            ? { seq: frame.seq, kind: 'chunk', chunk: JSON.parse(new TextDecoder().decode(frame.payload ?? undefined)) as ChatChunk }
            : { seq: frame.seq, kind: frame.kind },
        );
      },
    });
    subscriptions.push(subscription);
    await nc.flush();
    const publisher = new RunResponsePublisher({ nc, subject, streamId, created: 1_800_000_000, model: 'local/scripted', sessionId: 'session-1', heartbeatMs });
    return { publisher, received };
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
    const { publisher, received } = await response();
    publisher.content('let me check');
    publisher.endWithQuestion('call_1', question);
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

  it('sends nothing more to a client that left, heartbeats included', async () => {
    const { publisher, received } = await response(20);
    publisher.endWithRun({ reason: 'client_disconnected', tell: 'nothing' }, { finish: 'stop' }, usage);
    await settled(150);
    expect(reading(received)).toEqual([{ delta: { role: 'assistant' }, finish: null }]);
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
