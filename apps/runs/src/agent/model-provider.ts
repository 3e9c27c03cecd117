/**
 * What the agent loop needs from a model: one streamed turn at a time. A turn ends when the iterable
 * completes; if it produced tool calls, the loop runs them and asks for the next turn with their results.
 */
export interface ModelToolCall {
  id: string;
  name: string;
  /** The call's arguments as a JSON string, as models produce them. */
  arguments: string;
}

export type ConversationMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls: ModelToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

/** A tool offered to the model; `parameters` is a JSON Schema object. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ModelTurnRequest {
  /** The effective model, `<author>/<model>`. */
  model: string;
  messages: ConversationMessage[];
  tools: ToolSpec[];
  /** Aborted when the run is cancelled; the provider stops at once (throwing the signal's reason is fine). */
  signal: AbortSignal;
}

export type ModelStreamEvent =
  | { type: 'content'; text: string }
  | { type: 'tool_call'; call: ModelToolCall }
  | { type: 'usage'; promptTokens: number; completionTokens: number };

export interface ModelProvider {
  streamTurn(request: ModelTurnRequest): AsyncIterable<ModelStreamEvent>;
}

/**
 * A provider failure the run reports to its client: `configuration_error` when retrying cannot help (no key,
 * key refused, unknown model), `internal_error` when it may (provider down, rate limited, broken stream).
 */
export class ModelProviderError extends Error {
  constructor(
    readonly reason: 'configuration_error' | 'internal_error',
    message: string,
  ) {
    super(message);
    this.name = 'ModelProviderError';
  }
}
