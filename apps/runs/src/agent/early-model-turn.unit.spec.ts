/**
 * EarlyModelTurn: the model is asked at once, what it streams before anyone reads is kept in order, the reader
 * then follows the model live, a failure reaches the reader (and only it), and giving the turn up or the run's stop
 * aborts the provider's request.
 */
import type { ModelProvider, ModelStreamEvent, ModelTurnRequest } from './model-provider';
import { EarlyModelTurn } from './early-model-turn';

const REQUEST = { model: 'local/test', messages: [{ role: 'user' as const, content: 'hi' }], tools: [] };

/** A provider whose turn the spec drives event by event; it records the request it was asked. */
class DrivenProvider implements ModelProvider {
  request: ModelTurnRequest | null = null;
  private readonly queue: Array<ModelStreamEvent | Error | 'end'> = [];
  private wake: (() => void) | null = null;

  push(item: ModelStreamEvent | Error | 'end'): void {
    this.queue.push(item);
    this.wake?.();
  }

  async *streamTurn(request: ModelTurnRequest): AsyncIterable<ModelStreamEvent> {
    this.request = request;
    for (;;) {
      const aborted = new Promise<never>((_, reject) => {
        if (request.signal.aborted) reject(request.signal.reason);
        request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true });
      });
      while (this.queue.length === 0) await Promise.race([new Promise<void>((resolve) => (this.wake = resolve)), aborted]);
      const item = this.queue.shift() as ModelStreamEvent | Error | 'end';
      if (item === 'end') return;
      if (item instanceof Error) throw item;
      yield item;
    }
  }
}

const content = (text: string): ModelStreamEvent => ({ type: 'content', text });

async function readAll(turn: EarlyModelTurn): Promise<ModelStreamEvent[]> {
  const events: ModelStreamEvent[] = [];
  for await (const event of turn.stream()) events.push(event);
  return events;
}

describe('EarlyModelTurn', () => {
  it('asks the model when it is made, before anyone reads', () => {
    const provider = new DrivenProvider();
    const turn = new EarlyModelTurn(provider, REQUEST);
    expect(provider.request).toMatchObject(REQUEST);
    expect(provider.request?.signal.aborted).toBe(false);
    turn.abandon(new Error('done with the spec'));
  });

  it('gives what the model streamed before the read in order, then follows the model live', async () => {
    const provider = new DrivenProvider();
    const turn = new EarlyModelTurn(provider, REQUEST);
    provider.push(content('one'));
    provider.push(content('two'));
    await new Promise((resolve) => setImmediate(resolve));
    const reading = readAll(turn);
    await new Promise((resolve) => setImmediate(resolve));
    provider.push(content('three'));
    provider.push({ type: 'usage', promptTokens: 1, completionTokens: 3 });
    provider.push('end');
    expect(await reading).toEqual([content('one'), content('two'), content('three'), { type: 'usage', promptTokens: 1, completionTokens: 3 }]);
  });

  it("keeps a model failure for the reader, after what came before it, and raises nothing on its own", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const provider = new DrivenProvider();
      const turn = new EarlyModelTurn(provider, REQUEST);
      provider.push(content('partial'));
      provider.push(new Error('the provider broke'));
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(unhandled).toEqual([]);
      const seen: ModelStreamEvent[] = [];
      await expect(
        (async () => {
          for await (const event of turn.stream()) seen.push(event);
        })(),
      ).rejects.toThrow('the provider broke');
      expect(seen).toEqual([content('partial')]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('aborts the provider when the turn is given up, and the reader meets the reason', async () => {
    const provider = new DrivenProvider();
    const turn = new EarlyModelTurn(provider, REQUEST);
    const refusal = new Error('the start was refused');
    turn.abandon(refusal);
    expect(provider.request?.signal.aborted).toBe(true);
    expect(provider.request?.signal.reason).toBe(refusal);
    await expect(readAll(turn)).rejects.toBe(refusal);
  });

  it("aborts the provider when the run it follows stops, also while the reader waits", async () => {
    const provider = new DrivenProvider();
    const turn = new EarlyModelTurn(provider, REQUEST);
    const run = new AbortController();
    turn.follow(run.signal);
    const reading = readAll(turn);
    await new Promise((resolve) => setImmediate(resolve));
    const stop = new Error('run stopped');
    run.abort(stop);
    expect(provider.request?.signal.reason).toBe(stop);
    await expect(reading).rejects.toBe(stop);
  });

  it('aborts at once when it follows a run that already stopped', () => {
    const provider = new DrivenProvider();
    const turn = new EarlyModelTurn(provider, REQUEST);
    const run = new AbortController();
    run.abort(new Error('stopped before'));
    turn.follow(run.signal);
    expect(provider.request?.signal.aborted).toBe(true);
  });
});
