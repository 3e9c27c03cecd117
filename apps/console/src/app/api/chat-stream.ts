import type { QuestionArguments, Usage } from './types';

/** The stream's end marker (interface section 6). */
export const DONE = '[DONE]';

/** A question a stream ended with (`tool_calls`): a `service.provide_input` call with its parsed arguments. */
export interface StreamQuestion {
  toolCallId: string;
  arguments: QuestionArguments;
}

/** What a chat response or a run's stream has shown so far. */
export interface StreamState {
  /** Every content delta, joined. */
  text: string;
  /** The last finish reason seen (`stop`, `tool_calls`, `error`), null while streaming. */
  finishReason: string | null;
  /** The question the stream paused on; null once the run went on. */
  question: StreamQuestion | null;
  /** Every question asked along the way (a replay shows them all). */
  asked: StreamQuestion[];
  /** The error chunk's message (`run_ended`, `stream_severed`, ...). */
  error: string | null;
  sessionId: string | null;
  usage: Usage | null;
  /** `[DONE]` arrived. */
  done: boolean;
}

export const EMPTY_STREAM: StreamState = {
  text: '',
  finishReason: null,
  question: null,
  asked: [],
  error: null,
  sessionId: null,
  usage: null,
  done: false,
};

interface ToolCallDelta {
  id?: string;
  function?: { name?: string; arguments?: string };
}

interface Chunk {
  choices?: { delta?: { content?: string; tool_calls?: ToolCallDelta[] }; finish_reason?: string | null }[];
  error?: { message?: string };
  session_id?: string;
  usage?: Usage | null;
}

/** A question's arguments, or null when they are not one of the two kinds the interface defines. */
export function questionArgumentsOf(json: string | undefined): QuestionArguments | null {
  if (json === undefined) return null;
  try {
    const parsed = JSON.parse(json) as Partial<QuestionArguments>;
    if (parsed.kind === 'permission' && Array.isArray(parsed.options)) return parsed as QuestionArguments;
    if (parsed.kind === 'elicitation' && Array.isArray(parsed.fields)) return parsed as QuestionArguments;
  } catch {
    return null;
  }
  return null;
}

/** The state after one event's `data` (a chunk as JSON, or `[DONE]`); unparseable data is ignored. */
export function applyStreamData(state: StreamState, data: string): StreamState {
  if (data === DONE) return { ...state, done: true };
  let chunk: Chunk;
  try {
    chunk = JSON.parse(data) as Chunk;
  } catch {
    return state;
  }
  let next: StreamState = state.done ? { ...state, done: false } : state;
  if (chunk.error?.message !== undefined) next = { ...next, error: chunk.error.message };
  if (chunk.session_id !== undefined) next = { ...next, sessionId: chunk.session_id, usage: chunk.usage ?? null };
  for (const choice of chunk.choices ?? []) {
    const delta = choice.delta ?? {};
    if (typeof delta.content === 'string' && delta.content !== '') {
      // Content after a question means it was answered and the run went on.
      next = { ...next, text: next.text + delta.content, question: null, finishReason: null };
    }
    for (const call of delta.tool_calls ?? []) {
      const args = questionArgumentsOf(call.function?.arguments);
      if (call.id !== undefined && args !== null) {
        const question = { toolCallId: call.id, arguments: args };
        next = { ...next, question, asked: [...next.asked, question] };
      }
    }
    if (choice.finish_reason) next = { ...next, finishReason: choice.finish_reason };
  }
  return next;
}
