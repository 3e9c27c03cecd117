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
    // Aborted when the caller stops iterating early, so the connection is released.
    const done = new AbortController();
    const signal = AbortSignal.any([request.signal, deadline.signal, done.signal]);
    const failure = (error: unknown, stage: string): unknown => {
      if (request.signal.aborted) return request.signal.reason;
      if (deadline.signal.aborted) {
        return new ModelProviderError('internal_error', `the model provider did not answer within ${deadline.ms} ms ${stage}`);
      }
      if (error instanceof ModelProviderError) return error;
      return new ModelProviderError('internal_error', this.redact(`the model provider could not be reached ${stage}: ${describe(error)}`));
    };

    try {
      deadline.arm();
      let response: Response;
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
        throw failure(error, 'before responding');
      }
      deadline.clear();
      if (!response.ok) {
        let body = '';
        deadline.arm();
        try {
          body = await response.text();
        } catch (error) {
          throw failure(error, 'while sending its error');
        }
        throw this.statusError(response.status, body, request.model);
      }
      if (response.body === null) throw new ModelProviderError('internal_error', 'the model provider sent an empty response');

      const turn = new TurnAccumulator();
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      const pending: EventSourceMessage[] = [];
      const parser = createParser({ onEvent: (event) => pending.push(event) });
      try {
        while (!turn.ended) {
          deadline.arm();
          let chunk: Awaited<ReturnType<typeof reader.read>>;
          try {
            chunk = await reader.read();
          } catch (error) {
            throw failure(error, 'while streaming');
          }
          // Time the consumer spends on what we yield is not the provider's silence.
          deadline.clear();
          if (chunk.done) break;
          parser.feed(chunk.value);
          for (const event of pending.splice(0)) {
            const content = turn.accept(event.data);
            if (content !== '') yield { type: 'content', text: content };
            if (turn.ended) break;
          }
        }
      } finally {
        // After `[DONE]` or an early stop by the caller: let go of the connection.
        reader.cancel().catch(() => undefined);
      }
      if (!turn.finished) {
        throw new ModelProviderError('internal_error', 'the model provider ended the stream before finishing the turn');
      }
      for (const call of turn.toolCalls()) yield { type: 'tool_call', call };
      if (turn.usage) yield { type: 'usage', ...turn.usage };
    } finally {
      deadline.clear();
      done.abort();
    }
  }

  private statusError(status: number, body: string, model: string): ModelProviderError {
    const detail = this.redact(providerMessage(body) ?? '');
    const suffix = detail === '' ? '' : `: ${detail}`;
    if (status === 401 || status === 403) {
      return new ModelProviderError('configuration_error', `the model provider refused the configured API key (HTTP ${status})`);
    }
    if (status === 404) {
      return new ModelProviderError('configuration_error', `the model provider found no model "${model}" or no chat completions endpoint (HTTP 404)`);
    }
    if (status === 429) return new ModelProviderError('internal_error', `the model provider is rate limiting requests (HTTP 429)${suffix}`);
    if (status >= 400 && status < 500 && status !== 408) {
      return new ModelProviderError('configuration_error', `the model provider rejected the request (HTTP ${status})${suffix}`);
    }
    return new ModelProviderError('internal_error', `the model provider failed (HTTP ${status})${suffix}`);
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
  choices?: { delta?: { content?: string | null; tool_calls?: ChunkToolCallDelta[] }; finish_reason?: string | null }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
}

/** What one streamed turn said so far: the tool calls assembled from their pieces, usage, and whether it finished. */
class TurnAccumulator {
  /** `[DONE]` arrived: nothing more will. */
  ended = false;
  /** A choice carried a finish_reason or the stream said `[DONE]`. */
  finished = false;
  usage: { promptTokens: number; completionTokens: number } | null = null;
  private readonly calls = new Map<number, { id: string; name: string; arguments: string }>();
  private lastIndex = 0;

  /** Takes one SSE data payload; returns the content it carries ('' for none). */
  accept(data: string): string {
    if (data.trim() === '[DONE]') {
      this.ended = true;
      this.finished = true;
      return '';
    }
    let chunk: CompletionChunk;
    try {
      chunk = JSON.parse(data) as CompletionChunk;
    } catch {
      throw new ModelProviderError('internal_error', 'the model provider sent a malformed stream chunk');
    }
    if (chunk.error) {
      const message = typeof chunk.error.message === 'string' ? `: ${truncate(chunk.error.message)}` : '';
      throw new ModelProviderError('internal_error', `the model provider failed mid-stream${message}`);
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
        if (call.name === '') throw new ModelProviderError('internal_error', 'the model provider sent a tool call without a name');
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
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}

/** `{error:{message}}` as OpenAI and most compatible providers send it, else a short plain-text body. */
function providerMessage(body: string): string | null {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof parsed.error === 'object' && typeof parsed.error?.message === 'string') return truncate(parsed.error.message);
    if (typeof parsed.error === 'string') return truncate(parsed.error);
    if (typeof parsed.message === 'string') return truncate(parsed.message);
    return null;
  } catch {
    const text = body.trim();
    return text === '' || text.startsWith('<') ? null : truncate(text);
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
  const reason = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : null;
  return reason === null ? text : `${text} (${reason})`;
}
