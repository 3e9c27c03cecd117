import { randomBytes } from 'node:crypto';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import {
  type ConversationMessage,
  type ModelProvider,
  ModelProviderError,
  type ModelStreamEvent,
  type ModelToolCall,
  type ModelTurnRequest,
  type ToolSpec,
} from '../model-provider';

export interface OpenAiCompatibleProviderOptions {
  /** MODEL_API_BASE_URL, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  /** MODEL_API_KEY; sent as a bearer token and never put into an error message. */
  apiKey: string;
  /** How long to wait for the response headers, and at most between two chunks of the stream. */
  requestTimeoutMs: number;
  fetch?: typeof fetch;
}

interface ProviderCall {
  request: ModelTurnRequest;
  deadline: Deadline;
  /** The request's signal, the deadline's and the end of the turn's, combined. */
  signal: AbortSignal;
}

/** Provider error texts are shown to callers; a long HTML error page is cut. */
const MAX_PROVIDER_MESSAGE_CHARS = 500;

/**
 * Any provider speaking OpenAI's streamed chat completions (`POST /chat/completions`, server-sent events).
 * Content is yielded as it arrives; tool calls, whose arguments arrive in pieces, once the stream ends; usage last.
 */
export class OpenAiCompatibleProvider implements ModelProvider {
  private readonly endpoint: string;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: OpenAiCompatibleProviderOptions) {
    this.endpoint = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  async *streamTurn(request: ModelTurnRequest): AsyncIterable<ModelStreamEvent> {
    request.signal.throwIfAborted();
    const deadline = new Deadline(this.options.requestTimeoutMs);
    // Aborted when the turn is over or the caller stops iterating early, so the connection is released.
    const done = new AbortController();
    const call: ProviderCall = {
      request,
      deadline,
      signal: AbortSignal.any([request.signal, deadline.signal, done.signal]),
    };
    try {
      const response = await this.post(call);
      if (response.body === null) {
        throw new ModelProviderError('internal_error', 'the model provider sent an empty response');
      }
      const turn = new TurnAccumulator((text) => this.redact(text));
      yield* this.streamContent(call, response.body, turn);
      request.signal.throwIfAborted();
      if (!turn.finished) {
        throw new ModelProviderError('internal_error', 'the model provider ended the stream before finishing the turn');
      }
      for (const toolCall of turn.toolCalls()) yield { type: 'tool_call', call: toolCall };
      if (turn.usage) yield { type: 'usage', ...turn.usage };
    } finally {
      deadline.clear();
      done.abort();
    }
  }

  /** Sends the request; resolves with a successful streaming response, throws the mapped error otherwise. */
  private async post(call: ProviderCall): Promise<Response> {
    const { request, deadline, signal } = call;
    let response: Response;
    deadline.arm();
    try {
      response = await this.fetch(this.endpoint, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${this.options.apiKey}`,
          'content-type': 'application/json',
          accept: 'text/event-stream',
        },
        body: JSON.stringify(requestBody(request)),
        signal,
      });
    } catch (error) {
      throw this.failure(call, error, 'waiting for the response');
    }
    deadline.clear();
    if (response.ok) return response;
    let body: string;
    deadline.arm();
    try {
      body = await response.text();
    } catch (error) {
      throw this.failure(call, error, 'reading its error');
    }
    throw this.statusError(response.status, body, request.model);
  }

  /** Yields content as it arrives until `[DONE]` or the end of the body; the rest goes into `turn`. */
  private async *streamContent(
    call: ProviderCall,
    body: ReadableStream<Uint8Array>,
    turn: TurnAccumulator,
  ): AsyncIterable<ModelStreamEvent> {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    const pending: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (event) => pending.push(event) });
    try {
      while (!turn.ended) {
        call.deadline.arm();
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (error) {
          throw this.failure(call, error, 'streaming');
        }
        // Time the consumer spends on what we yield is not the provider's silence.
        call.deadline.clear();
        call.request.signal.throwIfAborted();
        // At the end, a last event without its closing blank line still counts.
        parser.feed(chunk.done ? '\n\n' : chunk.value);
        for (const event of pending.splice(0)) {
          const content = turn.accept(event.data);
          if (content !== '') yield { type: 'content', text: content };
          if (turn.ended) return;
        }
        if (chunk.done) return;
      }
    } finally {
      // After `[DONE]` or an early stop by the caller: let go of the connection.
      reader.cancel().catch(() => undefined);
    }
  }

  /** A failed fetch or read: the caller's abort as is, else what went wrong as a retryable provider error. */
  private failure(call: ProviderCall, error: unknown, stage: string): unknown {
    if (call.request.signal.aborted) return call.request.signal.reason;
    if (call.deadline.signal.aborted) {
      return new ModelProviderError(
        'internal_error',
        `the model provider sent nothing for ${call.deadline.ms} ms (${stage})`,
      );
    }
    return new ModelProviderError(
      'internal_error',
      this.redact(`the connection to the model provider failed (${stage}): ${describe(error)}`),
    );
  }

  private statusError(status: number, body: string, model: string): ModelProviderError {
    const detail = this.redact(providerMessage(body) ?? '');
    const suffix = detail === '' ? '' : `: ${detail}`;
    const error = (reason: ModelProviderError['reason'], message: string) =>
      new ModelProviderError(reason, `${message} (HTTP ${status})`);
    if (status === 401 || status === 403) {
      return error('configuration_error', 'the model provider refused the configured API key');
    }
    if (status === 404) {
      const what = `no model "${model}" or no chat completions endpoint`;
      return error('configuration_error', `the model provider knows ${what}`);
    }
    if (status === 429) return error('internal_error', `the model provider is rate limiting requests${suffix}`);
    // Other client errors will not go away by retrying the same request; a request timeout (408) may.
    if (status >= 400 && status < 500 && status !== 408) {
      return error('configuration_error', `the model provider rejected the request${suffix}`);
    }
    return error('internal_error', `the model provider failed${suffix}`);
  }

  /** Providers sometimes echo a (partial) key in their messages; ours must never carry it. */
  private redact(text: string): string {
    const key = this.options.apiKey;
    return key === '' ? text : text.split(key).join('[redacted]');
  }
}

interface ChunkToolCallDelta {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

interface CompletionChunk {
  error?: { message?: unknown };
  choices?: {
    delta?: { content?: string | null; tool_calls?: ChunkToolCallDelta[] };
    finish_reason?: string | null;
  }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
}

/** What a streamed turn said besides its content: tool calls assembled from their pieces, usage, the end. */
class TurnAccumulator {
  /** `[DONE]` arrived: nothing more will. */
  ended = false;
  /** A choice carried a finish_reason or the stream said `[DONE]`. */
  finished = false;
  usage: { promptTokens: number; completionTokens: number } | null = null;
  private readonly calls = new Map<number, { id: string; name: string; arguments: string }>();
  private lastIndex = 0;

  constructor(private readonly redact: (text: string) => string) {}

  /** Takes one SSE data payload; returns the content it carries ('' for none). */
  accept(data: string): string {
    if (data.trim() === '[DONE]') {
      this.ended = true;
      this.finished = true;
      return '';
    }
    const chunk = parseObject(data) as CompletionChunk | null;
    if (chunk === null) {
      throw new ModelProviderError('internal_error', 'the model provider sent a malformed stream chunk');
    }
    if (chunk.error) {
      const message = typeof chunk.error.message === 'string' ? `: ${truncate(chunk.error.message)}` : '';
      throw new ModelProviderError('internal_error', this.redact(`the model provider failed mid-stream${message}`));
    }
    if (chunk.usage) {
      this.usage = {
        promptTokens: wholeTokens(chunk.usage.prompt_tokens),
        completionTokens: wholeTokens(chunk.usage.completion_tokens),
      };
    }
    const choice = chunk.choices?.[0];
    if (!choice) return '';
    if (choice.finish_reason) this.finished = true;
    for (const delta of choice.delta?.tool_calls ?? []) this.addToolCallDelta(delta);
    return choice.delta?.content ?? '';
  }

  toolCalls(): ModelToolCall[] {
    return [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => {
        if (call.name === '') {
          throw new ModelProviderError('internal_error', 'the model provider sent a tool call without a name');
        }
        return {
          id: call.id === '' ? `call_${randomBytes(12).toString('hex')}` : call.id,
          name: call.name,
          // A call of a tool without parameters may come with no arguments at all.
          arguments: call.arguments === '' ? '{}' : call.arguments,
        };
      });
  }

  private addToolCallDelta(delta: ChunkToolCallDelta): void {
    // Some OpenAI-compatible servers omit `index`; a new id then starts a new call.
    const index =
      typeof delta.index === 'number'
        ? delta.index
        : delta.id && this.calls.size > 0 && this.calls.get(this.lastIndex)?.id !== delta.id
          ? Math.max(...this.calls.keys()) + 1
          : this.lastIndex;
    this.lastIndex = index;
    const call = this.calls.get(index) ?? { id: '', name: '', arguments: '' };
    if (delta.id && call.id === '') call.id = delta.id;
    if (delta.function?.name && call.name === '') call.name = delta.function.name;
    call.arguments += delta.function?.arguments ?? '';
    this.calls.set(index, call);
  }
}

/** A timer that aborts its signal when not re-armed in time. */
class Deadline {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  readonly signal = this.controller.signal;

  constructor(readonly ms: number) {}

  arm(): void {
    this.clear();
    this.timer = setTimeout(() => this.controller.abort(new Error(`no answer within ${this.ms} ms`)), this.ms);
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

function requestBody(request: ModelTurnRequest): Record<string, unknown> {
  return {
    model: request.model,
    messages: request.messages.map(toOpenAiMessage),
    ...(request.tools.length > 0 ? { tools: request.tools.map(toOpenAiTool) } : {}),
    stream: true,
    stream_options: { include_usage: true },
  };
}

function toOpenAiMessage(message: ConversationMessage): Record<string, unknown> {
  switch (message.role) {
    case 'assistant':
      if (message.toolCalls.length === 0) return { role: 'assistant', content: message.content };
      return {
        role: 'assistant',
        content: message.content === '' ? null : message.content,
        tool_calls: message.toolCalls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
        })),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    default:
      return { role: message.role, content: message.content };
  }
}

function toOpenAiTool(tool: ToolSpec): Record<string, unknown> {
  const { name, description, parameters } = tool;
  return { type: 'function', function: { name, description, parameters } };
}

/** `{error:{message}}` as OpenAI and most compatible providers send it, else a short plain-text body. */
function providerMessage(body: string): string | null {
  const parsed = parseObject(body) as { error?: { message?: unknown } | string | null; message?: unknown } | null;
  if (parsed === null) {
    const text = body.trim();
    return text === '' || text.startsWith('<') ? null : truncate(text);
  }
  const message = typeof parsed.error === 'string' ? parsed.error : (parsed.error?.message ?? parsed.message);
  return typeof message === 'string' ? truncate(message) : null;
}

/** A JSON object, or null for anything else (invalid JSON, arrays, scalars). */
function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    const isObject = typeof value === 'object' && value !== null && !Array.isArray(value);
    return isObject ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function truncate(text: string): string {
  return text.length <= MAX_PROVIDER_MESSAGE_CHARS ? text : `${text.slice(0, MAX_PROVIDER_MESSAGE_CHARS)}…`;
}

function wholeTokens(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : 0;
}

/** fetch reports network failures as "fetch failed" with the actual reason as the cause. */
function describe(error: unknown): string {
  // Duck-typed: errors raised by Node's own fetch may come from another realm than this module's `Error`.
  const { message, cause } = (error ?? {}) as { message?: unknown; cause?: { message?: unknown; code?: unknown } };
  const text = typeof message === 'string' ? message : String(error);
  const reason = typeof cause?.code === 'string' ? cause.code : cause?.message;
  return typeof reason === 'string' ? `${text} (${reason})` : text;
}
