import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { type ModelProvider, ModelProviderError, type ModelStreamEvent, type ModelTurnRequest } from '../model-provider';
import { describeFetchFailure, statusError } from './openai-compatible.errors';
import { requestBody } from './openai-compatible.request';
import { TurnAccumulator } from './openai-compatible.stream';

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

/**
 * Any provider speaking OpenAI's streamed chat completions (`POST /chat/completions`, server-sent events).
 * Content is yielded as it arrives; tool calls, whose arguments arrive in pieces, once the stream ends; usage last.
 * This file holds the exchange and its timing; the request body, the stream's chunks and the error texts
 * have files of their own (`openai-compatible.{request,stream,errors}.ts`).
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
    throw statusError(response.status, body, request.model, (text) => this.redact(text));
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
      this.redact(`the connection to the model provider failed (${stage}): ${describeFetchFailure(error)}`),
    );
  }

  /** Providers sometimes echo a (partial) key in their messages; ours must never carry it. */
  private redact(text: string): string {
    const key = this.options.apiKey;
    return key === '' ? text : text.split(key).join('[redacted]');
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
