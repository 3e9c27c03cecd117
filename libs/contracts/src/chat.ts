/**
 * Chat and invoke (CONTRACT sections 6 and 7): the chunk format clients see, the payloads the gateway
 * sends to runs, and the frames runs publishes on `runs.stream.<stream_id>`.
 */
import { createHash } from 'node:crypto';
import type { ErrorEnvelope } from './errors';
import type { RequestContext } from './principal';

/** The pause tool, named exactly so everywhere. */
export const PROVIDE_INPUT_TOOL = 'service.provide_input';
export const PERMISSION_OPTIONS = ['allow_once', 'allow_always', 'reject_once', 'reject_always'] as const;
export type PermissionOption = (typeof PERMISSION_OPTIONS)[number];
/** Besides an offered option, a permission question may always be answered `cancel`. */
export const CANCEL_ANSWER = 'cancel';

export const APPROVAL_MODES = ['manual', 'self-drive'] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];

export const MAX_PROMPT_CHARS = 32000;
export const MAX_SESSION_ID_CHARS = 256;

/** `length`: the run reached a cap (MAX_TOOL_CALLS_PER_RUN, CONTRACT section 15) and ended there. */
export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'error';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export const ELICITATION_FIELD_TYPES = ['string', 'number', 'integer', 'boolean'] as const;
export interface ElicitationField {
  name: string;
  type: (typeof ELICITATION_FIELD_TYPES)[number];
  required: boolean;
}

export interface PermissionQuestion {
  kind: 'permission';
  operation: string;
  options: PermissionOption[];
}

export interface ElicitationQuestion {
  kind: 'elicitation';
  message: string;
  fields: ElicitationField[];
}

/** The `arguments` of a `service.provide_input` call, before JSON encoding. */
export type Question = PermissionQuestion | ElicitationQuestion;

/**
 * The keys of a Question holding the model's words (an elicitation's field names too), and what each holds once a
 * transcript is purged (CONTRACT section 22): the session events and the webhook payloads that quote a question
 * blank the same keys. The kind and a permission's options stay.
 */
export const QUESTION_WORDING: readonly { key: 'operation' | 'message' | 'fields'; purged: '' | readonly [] }[] = [
  { key: 'operation', purged: '' },
  { key: 'message', purged: '' },
  { key: 'fields', purged: [] },
];

export type ElicitationAnswer =
  | { action: 'accept'; content: Record<string, unknown> }
  | { action: 'decline' }
  | { action: 'cancel' };

// ---- chunks ----

export interface ToolCallDelta {
  index: 0;
  id: string;
  type: 'function';
  function: { name: typeof PROVIDE_INPUT_TOOL; arguments: string };
}

export interface ChunkDelta {
  role?: 'assistant';
  content?: string;
  tool_calls?: ToolCallDelta[];
}

export interface ChunkChoice {
  index: 0;
  delta: ChunkDelta;
  finish_reason: FinishReason | null;
}

export interface ChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: ChunkChoice[];
  error?: ErrorEnvelope['error'];
  session_id?: string;
  usage?: Usage | null;
}

export interface ChunkIdentity {
  /** `chatcmpl-<uuid>`, constant per response. */
  id: string;
  model: string;
  /** Unix seconds, constant per response. */
  created: number;
}

/** The chunk id of the response relayed on stream `streamId` (a uuid minted by the gateway). */
export function chunkIdOf(streamId: string): string {
  return `chatcmpl-${streamId}`;
}

/** Builds the chunks of one response; every chunk shares id, model and created. */
export class ChunkBuilder {
  constructor(private readonly identity: ChunkIdentity) {}

  private chunk(choices: ChunkChoice[]): ChatChunk {
    return { id: this.identity.id, object: 'chat.completion.chunk', created: this.identity.created, model: this.identity.model, choices };
  }

  role(): ChatChunk {
    return this.chunk([{ index: 0, delta: { role: 'assistant' }, finish_reason: null }]);
  }

  content(text: string): ChatChunk {
    return this.chunk([{ index: 0, delta: { content: text }, finish_reason: null }]);
  }

  toolCall(toolCallId: string, question: Question): ChatChunk {
    const call: ToolCallDelta = {
      index: 0,
      id: toolCallId,
      type: 'function',
      function: { name: PROVIDE_INPUT_TOOL, arguments: JSON.stringify(question) },
    };
    return this.chunk([{ index: 0, delta: { tool_calls: [call] }, finish_reason: null }]);
  }

  finish(reason: Exclude<FinishReason, 'error'>): ChatChunk {
    return this.chunk([{ index: 0, delta: {}, finish_reason: reason }]);
  }

  error(error: ErrorEnvelope['error']): ChatChunk {
    return { ...this.chunk([{ index: 0, delta: {}, finish_reason: 'error' }]), error };
  }

  final(sessionId: string, usage: Usage | null): ChatChunk {
    return { ...this.chunk([]), session_id: sessionId, usage };
  }
}

// ---- requests (gateway -> runs) ----

/** What a chat request asks for: a prompt (new run, or steering a going one) or an answer to a question. */
export type ChatTurn =
  | {
      kind: 'prompt';
      text: string;
      sessionId: string | null;
      approvalMode: ApprovalMode;
      /** `"background": true`: the run goes on when the client leaves (CONTRACT section 12). */
      background: boolean;
    }
  | { kind: 'answer'; sessionId: string; toolCallId: string; content: string; approvalMode: ApprovalMode; background: boolean };

export interface ChatRequest {
  context: RequestContext;
  internId: string;
  /** Minted by the gateway, which subscribed to `runs.stream.<streamId>` before sending this. */
  streamId: string;
  /** The response's `created` (unix seconds), fixed by the gateway so chunks it writes itself match. */
  created: number;
  turn: ChatTurn;
}

export type ChatReply =
  /** Chunks of this response follow on the stream subject. */
  | { status: 'streaming'; sessionId: string; model: string; runId: string }
  /** The prompt joined the session's going run: answer 202, nothing is streamed. */
  | { status: 'steered'; sessionId: string; runId: string };

export interface InvokeBody {
  input: string;
  session_id?: string;
}

export interface InvokeRequest {
  context: RequestContext;
  internId: string;
  input: string;
  sessionId: string | null;
}

export interface InvokeReply {
  session_id: string;
  status: 'started' | 'steered';
  run_id: string;
}

// ---- the stream subject (runs -> gateway) ----

/**
 * One message on `runs.stream.<stream_id>`: `<seq> <kind>[ <event id>]\n<payload>`. `seq` starts at 1 and grows
 * by one per message (heartbeats included), so the relay sees a lost message as a gap. The payload of a chunk
 * frame is the chunk's JSON, relayed as is, and its event id the chunk's number in its run (the SSE `id:`);
 * heartbeat and done frames have neither. A run's chunk log (`runs.chunks.<run_id>`) holds the same frames,
 * numbered by the chunk's number in the run.
 */
export const STREAM_FRAME_KINDS = { chunk: 'c', heartbeat: 'h', done: 'd' } as const;
export type StreamFrameKind = keyof typeof STREAM_FRAME_KINDS;

export interface StreamFrame {
  seq: number;
  kind: StreamFrameKind;
  /** The chunk's number in its run (chunk frames of a live response). */
  eventId: number | null;
  /** The chunk JSON (chunk frames only). */
  payload: Uint8Array | null;
}

const KIND_BY_CODE: Record<string, StreamFrameKind> = { c: 'chunk', h: 'heartbeat', d: 'done' };
const encoder = new TextEncoder();

export function encodeStreamFrame(seq: number, kind: StreamFrameKind, payload?: string, eventId?: number): Uint8Array {
  const head = `${seq} ${STREAM_FRAME_KINDS[kind]}${eventId === undefined ? '' : ` ${eventId}`}\n`;
  return encoder.encode(payload === undefined ? head : head + payload);
}

/** null for anything that is not a frame (the relay treats it as a broken link). */
export function decodeStreamFrame(bytes: Uint8Array): StreamFrame | null {
  const newline = bytes.indexOf(10);
  if (newline < 3) return null;
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, newline).toString('latin1');
  const [seqText, code, eventIdText, ...rest] = head.split(' ');
  const seq = Number(seqText);
  const kind = KIND_BY_CODE[code ?? ''];
  if (!/^\d+$/.test(seqText) || !Number.isSafeInteger(seq) || seq < 1 || kind === undefined || rest.length > 0) return null;
  let eventId: number | null = null;
  if (eventIdText !== undefined) {
    eventId = Number(eventIdText);
    if (kind !== 'chunk' || !/^\d+$/.test(eventIdText) || !Number.isSafeInteger(eventId) || eventId < 1) return null;
  }
  const payload = kind === 'chunk' ? bytes.subarray(newline + 1) : null;
  return { seq, kind, eventId, payload };
}

// ---- the session subject (anyone -> the replica that owns the session's run) ----

/**
 * Session ids are client-visible strings of up to 256 characters (chat may name its own), so the subject
 * token is a digest: NATS tokens allow neither dots nor wildcards.
 */
export function sessionSubjectToken(sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('hex').slice(0, 40);
}
