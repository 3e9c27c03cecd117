/**
 * Reads chat chunks (interface sections 6 and 12) off an event stream: content as it arrives, the
 * `service.provide_input` tool call before a `tool_calls` finish, an `error` finish's envelope, and the final
 * chunk's `session_id` and `usage`, up to `[DONE]`. A chat response holds one such sequence; a run's stream holds
 * one per response of the run (a question, then the response after its answer), so `onQuestion` is told of each
 * question as its sequence ends, while the stream goes on.
 */
import type { ChatChunk, ErrorEnvelope, FinishReason, Question, Usage } from '@interns/contracts';
import type { SseEvent } from '../http/sse-reader';

export interface AskedQuestion {
  toolCallId: string;
  question: Question;
  sessionId: string | null;
}

export interface ChatStreamHandlers {
  onContent?: (text: string) => void;
  /** Every chunk as it came, with its `id:` (for `--json`). */
  onChunk?: (chunk: ChatChunk, id: string | undefined) => void;
  /** A question whose sequence ended (after its final chunk); the reader waits for this before reading on. */
  onQuestion?: (asked: AskedQuestion) => Promise<void>;
}

/** How the stream ended: the last sequence's finish, and whether `[DONE]` arrived. */
export interface ChatStreamEnd {
  done: boolean;
  finish: FinishReason | null;
  error: ErrorEnvelope['error'] | null;
  /** The question of a `tool_calls` finish (told to `onQuestion` too, when given). */
  question: AskedQuestion | null;
  sessionId: string | null;
  usage: Usage | null;
  /** The `id:` of the last event: where a reader resumes (Last-Event-ID). */
  lastEventId: string | undefined;
}

export async function readChatStream(events: AsyncIterable<SseEvent>, handlers: ChatStreamHandlers = {}): Promise<ChatStreamEnd> {
  const end: ChatStreamEnd = { done: false, finish: null, error: null, question: null, sessionId: null, usage: null, lastEventId: undefined };
  let call: { id: string; arguments: string } | null = null;
  for await (const event of events) {
    if (event.data === '[DONE]') {
      end.done = true;
      break;
    }
    let chunk: ChatChunk;
    try {
      chunk = JSON.parse(event.data) as ChatChunk;
    } catch {
      continue;
    }
    if (event.id !== undefined) end.lastEventId = event.id;
    handlers.onChunk?.(chunk, event.id);
    if (chunk.choices.length === 0) {
      end.sessionId = chunk.session_id ?? end.sessionId;
      end.usage = chunk.usage ?? null;
      if (end.finish === 'tool_calls' && call !== null) {
        end.question = { toolCallId: call.id, question: parseQuestion(call.arguments), sessionId: end.sessionId };
        call = null;
        await handlers.onQuestion?.(end.question);
      }
      continue;
    }
    const [choice] = chunk.choices;
    if (choice.finish_reason === null && end.finish !== null) {
      // The next response of the run begins: the previous one's ending no longer describes the stream.
      Object.assign(end, { finish: null, error: null, question: null, usage: null });
    }
    if (choice.delta.content) handlers.onContent?.(choice.delta.content);
    const toolCall = choice.delta.tool_calls?.[0];
    if (toolCall) call = { id: toolCall.id, arguments: toolCall.function.arguments };
    if (choice.finish_reason !== null) {
      end.finish = choice.finish_reason;
      end.error = chunk.error ?? null;
    }
  }
  return end;
}

function parseQuestion(text: string): Question {
  try {
    return JSON.parse(text) as Question;
  } catch {
    return { kind: 'elicitation', message: text, fields: [] };
  }
}
