import { randomBytes } from 'node:crypto';
import { ModelProviderError, type ModelToolCall } from '../model-provider';
import { midStreamError, parseObject, type Redact } from './openai-compatible.errors';

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
export class TurnAccumulator {
  /** `[DONE]` arrived: nothing more will. */
  ended = false;
  /** A choice carried a finish_reason or the stream said `[DONE]`. */
  finished = false;
  usage: { promptTokens: number; completionTokens: number } | null = null;
  private readonly calls = new Map<number, { id: string; name: string; arguments: string }>();
  private lastIndex = 0;

  constructor(private readonly redact: Redact) {}

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
    if (chunk.error) throw midStreamError(chunk.error.message, this.redact);
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

function wholeTokens(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : 0;
}
