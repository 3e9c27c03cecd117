import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type ConversationMessage,
  ModelProviderError,
  type ModelStreamEvent,
  type ModelTurnRequest,
  type ToolSpec,
} from '../model-provider';
import { OpenAiCompatibleProvider } from './openai-compatible.provider';

const API_KEY = 'sk-test-secret-key-1234';

interface ReceivedRequest {
  method: string | undefined;
  path: string | undefined;
  authorization: string | undefined;
  body: Record<string, unknown>;
}

/** A stand-in for an OpenAI-compatible provider; each test says how it answers. */
class FakeProvider {
  readonly received: ReceivedRequest[] = [];
  answer: (res: ServerResponse) => void = (res) => res.end();
  private readonly server: Server = createServer((req, res) => this.handle(req, res));

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1/`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (piece: string) => (raw += piece));
    req.on('end', () => {
      this.received.push({
        method: req.method,
        path: req.url,
        authorization: req.headers.authorization,
        body: JSON.parse(raw) as Record<string, unknown>,
      });
      this.answer(res);
    });
  }
}

const startSse = (res: ServerResponse) =>
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
const sse = (data: unknown) => `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1700000000,
  model: 'gpt-test',
  choices: [{ index: 0, delta, finish_reason: finishReason }],
});
/** A piece of a tool call as OpenAI streams it: id, type and name only in the first piece. */
const toolDelta = (index: number, fn: { name?: string; arguments: string }, id?: string) =>
  chunk({ tool_calls: [{ index, ...(id ? { id, type: 'function' } : {}), function: fn }] });
const usageChunk = (prompt: number, completion: number) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
});

const shellTool: ToolSpec = {
  name: 'shell',
  description: 'Runs a command',
  parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
};

async function collect(events: AsyncIterable<ModelStreamEvent>): Promise<ModelStreamEvent[]> {
  const all: ModelStreamEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

async function providerError(events: AsyncIterable<ModelStreamEvent>): Promise<ModelProviderError> {
  const error = await collect(events).then(
    () => null,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ModelProviderError);
  expect((error as Error).message).not.toContain(API_KEY);
  return error as ModelProviderError;
}

describe('OpenAiCompatibleProvider', () => {
  const fake = new FakeProvider();
  let baseUrl: string;
  let provider: OpenAiCompatibleProvider;
  const request = (overrides: Partial<ModelTurnRequest> = {}): ModelTurnRequest => ({
    model: 'openai/gpt-test',
    messages: [{ role: 'user', content: 'hi' }],
    tools: [],
    signal: new AbortController().signal,
    ...overrides,
  });

  beforeAll(async () => {
    baseUrl = await fake.start();
    provider = new OpenAiCompatibleProvider({ baseUrl, apiKey: API_KEY, requestTimeoutMs: 300 });
  });
  afterAll(() => fake.stop());
  beforeEach(() => fake.received.splice(0));

  it("reads a stream whose events carry id: lines, as this platform's own chat streams do (CONTRACT section 12)", async () => {
    fake.answer = (res) => {
      startSse(res);
      // Numbered like a run's chunks: `id:` before `data:`; [DONE] has none.
      [chunk({ role: 'assistant' }), chunk({ content: 'Hi' }), chunk({}, 'stop'), usageChunk(2, 1)].forEach((event, index) => {
        res.write(`id: ${index + 1}\n${sse(event)}`);
      });
      res.end(sse('[DONE]'));
    };
    const events = await collect(provider.streamTurn(request()));
    expect(events).toEqual([
      { type: 'content', text: 'Hi' },
      { type: 'usage', promptTokens: 2, completionTokens: 1 },
    ]);
  });

  it('streams content deltas, then usage, and sends the mapped conversation', async () => {
    fake.answer = (res) => {
      startSse(res);
      res.write(sse(chunk({ role: 'assistant', content: '' })));
      res.write(sse(chunk({ content: 'Hel' })));
      res.write(sse(chunk({ content: 'lo!' })));
      res.write(sse(chunk({}, 'stop')));
      res.write(sse(usageChunk(12, 3)));
      res.end(sse('[DONE]'));
    };
    const messages: ConversationMessage[] = [
      { role: 'system', content: 'You are an intern.' },
      { role: 'user', content: 'list files' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'shell', arguments: '{"command":"ls"}' }] },
      { role: 'tool', toolCallId: 'call_1', content: 'a.txt\n' },
      { role: 'assistant', content: 'Here they are', toolCalls: [] },
      { role: 'user', content: 'thanks' },
    ];

    const events = await collect(provider.streamTurn(request({ messages, tools: [shellTool] })));

    expect(events).toEqual([
      { type: 'content', text: 'Hel' },
      { type: 'content', text: 'lo!' },
      { type: 'usage', promptTokens: 12, completionTokens: 3 },
    ]);
    expect(fake.received).toHaveLength(1);
    const [received] = fake.received;
    expect(received).toMatchObject({
      method: 'POST',
      path: '/v1/chat/completions',
      authorization: `Bearer ${API_KEY}`,
    });
    expect(received.body).toEqual({
      model: 'openai/gpt-test',
      messages: [
        { role: 'system', content: 'You are an intern.' },
        { role: 'user', content: 'list files' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'shell', arguments: '{"command":"ls"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'a.txt\n' },
        { role: 'assistant', content: 'Here they are' },
        { role: 'user', content: 'thanks' },
      ],
      tools: [
        {
          type: 'function',
          function: { name: 'shell', description: 'Runs a command', parameters: shellTool.parameters },
        },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('omits tools when none are offered', async () => {
    fake.answer = (res) => {
      startSse(res);
      res.write(sse(chunk({ content: 'ok' }, 'stop')));
      res.end(sse('[DONE]'));
    };
    expect(await collect(provider.streamTurn(request()))).toEqual([{ type: 'content', text: 'ok' }]);
    expect(fake.received[0].body).not.toHaveProperty('tools');
  });

  it('assembles tool calls split across deltas and yields them when the turn ends', async () => {
    fake.answer = (res) => {
      startSse(res);
      // One network write may carry several events, and one event may span writes.
      res.write(sse(chunk({ role: 'assistant', content: 'Let me look.' })));
      const opening = sse(toolDelta(0, { name: 'shell', arguments: '' }, 'call_a'));
      res.write(opening + sse(toolDelta(0, { arguments: '{"comm' })));
      const split = sse(toolDelta(0, { arguments: 'and":"ls"}' }));
      res.write(split.slice(0, 25));
      res.write(split.slice(25));
      res.write(sse(toolDelta(1, { name: 'ask_user', arguments: '{"message":' }, 'call_b')));
      res.write(sse(toolDelta(1, { arguments: '"Sure?"}' })));
      res.write(sse(chunk({}, 'tool_calls')));
      res.write(sse(usageChunk(40, 21)));
      res.end(sse('[DONE]'));
    };

    const events = await collect(provider.streamTurn(request({ tools: [shellTool] })));

    expect(events).toEqual([
      { type: 'content', text: 'Let me look.' },
      { type: 'tool_call', call: { id: 'call_a', name: 'shell', arguments: '{"command":"ls"}' } },
      { type: 'tool_call', call: { id: 'call_b', name: 'ask_user', arguments: '{"message":"Sure?"}' } },
      { type: 'usage', promptTokens: 40, completionTokens: 21 },
    ]);
  });

  it('accepts a stream that finishes without [DONE]', async () => {
    fake.answer = (res) => {
      startSse(res);
      res.write(sse(chunk({ content: 'fine' })));
      res.end(sse(chunk({}, 'stop')));
    };
    expect(await collect(provider.streamTurn(request()))).toEqual([{ type: 'content', text: 'fine' }]);
  });

  it('takes a last event that lacks its closing blank line', async () => {
    fake.answer = (res) => {
      startSse(res);
      res.write(sse(chunk({ content: 'end' })));
      res.end(sse(chunk({}, 'stop')).trimEnd());
    };
    expect(await collect(provider.streamTurn(request()))).toEqual([{ type: 'content', text: 'end' }]);
  });

  it('reports a malformed chunk as an internal error', async () => {
    fake.answer = (res) => {
      startSse(res);
      res.end(sse('{"choices": [') + sse('[DONE]'));
    };
    const error = await providerError(provider.streamTurn(request()));
    expect(error).toMatchObject({ reason: 'internal_error', message: expect.stringContaining('malformed') });
  });

  it('reports a stream that breaks off before finishing as an internal error', async () => {
    fake.answer = (res) => {
      startSse(res);
      res.end(sse(chunk({ content: 'half' })));
    };
    const error = await providerError(provider.streamTurn(request()));
    expect(error.reason).toBe('internal_error');
    expect(error.message).toMatch(/ended the stream/);
  });

  it('reports an error event inside the stream as an internal error', async () => {
    fake.answer = (res) => {
      startSse(res);
      res.end(sse({ error: { message: 'upstream overloaded' } }));
    };
    const error = await providerError(provider.streamTurn(request()));
    expect(error).toMatchObject({ reason: 'internal_error', message: expect.stringContaining('upstream overloaded') });
  });

  const answerWith = (status: number, body: string) => (res: ServerResponse) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(body);
  };
  const openAiError = (message: string) => JSON.stringify({ error: { message, type: 'invalid_request_error' } });

  it.each([401, 403])('reports HTTP %i as a refused key, without the key', async (status) => {
    fake.answer = answerWith(status, openAiError(`Incorrect API key provided: ${API_KEY}`));
    const error = await providerError(provider.streamTurn(request()));
    expect(error.reason).toBe('configuration_error');
    expect(error.message).toMatch(/refused the configured API key/);
  });

  it('reports HTTP 404 as a configuration error naming the model', async () => {
    fake.answer = answerWith(404, openAiError('The model does not exist'));
    const error = await providerError(provider.streamTurn(request({ model: 'openai/gpt-missing' })));
    expect(error.reason).toBe('configuration_error');
    expect(error.message).toContain('openai/gpt-missing');
  });

  it("reports HTTP 400 as a configuration error with the provider's message, key redacted", async () => {
    fake.answer = answerWith(400, openAiError(`Invalid value for 'tools' (key ${API_KEY})`));
    const error = await providerError(provider.streamTurn(request()));
    expect(error.reason).toBe('configuration_error');
    expect(error.message).toContain("Invalid value for 'tools'");
    expect(error.message).toContain('[redacted]');
  });

  it.each([429, 500, 503])('reports HTTP %i as an internal error', async (status) => {
    fake.answer = answerWith(status, openAiError('try again later'));
    const error = await providerError(provider.streamTurn(request()));
    expect(error.reason).toBe('internal_error');
    expect(error.message).toContain(String(status));
  });

  it('gives up when the provider sends no headers within the request timeout', async () => {
    fake.answer = () => undefined;
    const started = Date.now();
    const error = await providerError(provider.streamTurn(request()));
    expect(error).toMatchObject({ reason: 'internal_error', message: expect.stringContaining('300 ms') });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('gives up when the stream goes silent for longer than the request timeout', async () => {
    fake.answer = (res) => {
      startSse(res);
      res.write(sse(chunk({ content: 'thinking' })));
    };
    const seen: ModelStreamEvent[] = [];
    const error = await providerError(
      (async function* () {
        for await (const event of provider.streamTurn(request())) {
          seen.push(event);
          yield event;
        }
      })(),
    );
    expect(error.reason).toBe('internal_error');
    expect(seen).toEqual([{ type: 'content', text: 'thinking' }]);
  });

  it('rethrows the abort reason, unwrapped, when the run is cancelled mid-stream', async () => {
    fake.answer = (res) => {
      startSse(res);
      res.write(sse(chunk({ content: 'partial' })));
    };
    const controller = new AbortController();
    const reason = new Error('run cancelled');
    const events: ModelStreamEvent[] = [];
    // A long timeout: only the abort may end this stream.
    const patient = new OpenAiCompatibleProvider({ baseUrl, apiKey: API_KEY, requestTimeoutMs: 10_000 });
    const outcome = (async () => {
      for await (const event of patient.streamTurn(request({ signal: controller.signal }))) {
        events.push(event);
        controller.abort(reason);
      }
    })();
    await expect(outcome).rejects.toBe(reason);
    expect(events).toEqual([{ type: 'content', text: 'partial' }]);
  });

  it('reports an unreachable provider as an internal error', async () => {
    const closed = new FakeProvider();
    const closedUrl = await closed.start();
    await closed.stop();
    const unreachable = new OpenAiCompatibleProvider({ baseUrl: closedUrl, apiKey: API_KEY, requestTimeoutMs: 2000 });
    const error = await providerError(unreachable.streamTurn(request()));
    expect(error).toMatchObject({ reason: 'internal_error', message: expect.stringContaining('ECONNREFUSED') });
  });
});
