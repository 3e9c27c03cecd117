/**
 * Request rules of chat and invoke (CONTRACT sections 6 and 7), and of answers to `service.provide_input`.
 * Every refusal is DomainError('invalid_body').
 */
import { z } from 'zod';
import {
  APPROVAL_MODES,
  CANCEL_ANSWER,
  ChatTurn,
  ElicitationAnswer,
  ElicitationQuestion,
  InvokeBody,
  MAX_PROMPT_CHARS,
  MAX_SESSION_ID_CHARS,
  Question,
} from './chat';
import { DomainError } from './errors';
import { describeIssue, parseObjectBody } from './object-body';
import type { FreeTextPaths } from './request-text';
import type { AnswerRunBody } from './runs';

/**
 * The prompt text of each body that may hold NUL: it streams back as sent and is stored with U+FFFD in its
 * place. Every other text of these bodies (a session id names a stream, a tool call id is looked up) may not.
 */
export const CHAT_FREE_TEXT: FreeTextPaths = ['messages.*.content', 'messages.*.content.*.text'];
export const INVOKE_FREE_TEXT: FreeTextPaths = ['input'];
export const ANSWER_FREE_TEXT: FreeTextPaths = ['content'];

const textPart = z.looseObject({ type: z.literal('text'), text: z.string() });
const content = z.union([z.string(), z.array(textPart), z.null()]);
const sessionId = z
  .string()
  .min(1, `session_id must be 1-${MAX_SESSION_ID_CHARS} characters`)
  // No NUL (it names the session's stream, a text key): refused with every body's text, where the gateway reads it.
  .max(MAX_SESSION_ID_CHARS, `session_id must be 1-${MAX_SESSION_ID_CHARS} characters`);

const message = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content: content.optional() }),
  z.looseObject({ role: z.literal('developer'), content: content.optional() }),
  z.looseObject({ role: z.literal('user'), content: content.optional() }),
  z.looseObject({ role: z.literal('assistant'), content: content.optional(), tool_calls: z.array(z.unknown()).optional() }),
  z.looseObject({ role: z.literal('tool'), content: content.optional(), tool_call_id: z.string().min(1) }),
]);

export const chatSchema = z.looseObject({
  stream: z.literal(true, 'stream must be true'),
  messages: z.array(message).min(1, 'messages must hold at least one message'),
  session_id: sessionId.optional(),
  approval_mode: z.enum(APPROVAL_MODES, 'approval_mode must be "manual" or "self-drive"').optional(),
  background: z.boolean('background must be true or false').optional(),
});

export const invokeSchema = z.strictObject({
  input: z
    .string()
    .min(1, `input must be 1-${MAX_PROMPT_CHARS} characters`)
    .max(MAX_PROMPT_CHARS, `input must be 1-${MAX_PROMPT_CHARS} characters`),
  session_id: sessionId.optional(),
});

function textOf(value: z.infer<typeof content> | undefined): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  return value.map((part) => part.text).join('');
}

/** A chat body as the turn it asks for; only the last message is acted on. */
export function parseChatBody(value: unknown): ChatTurn {
  const body = parseObjectBody(chatSchema, value);
  const last = body.messages[body.messages.length - 1];
  const approvalMode = body.approval_mode ?? 'self-drive';
  const sessionIdOrNull = body.session_id ?? null;
  const background = body.background ?? false;
  if (last.role === 'tool') {
    if (sessionIdOrNull === null) throw new DomainError('invalid_body', 'session_id is required to answer a tool call');
    return { kind: 'answer', sessionId: sessionIdOrNull, toolCallId: last.tool_call_id, content: textOf(last.content), approvalMode, background };
  }
  if (last.role !== 'user') throw new DomainError('invalid_body', 'the last message must be a user message or a tool reply');
  const text = textOf(last.content);
  if (text.length === 0) throw new DomainError('invalid_body', 'the last user message has no text');
  if (text.length > MAX_PROMPT_CHARS) {
    throw new DomainError('invalid_body', `the last user message is longer than ${MAX_PROMPT_CHARS} characters`);
  }
  return { kind: 'prompt', text, sessionId: sessionIdOrNull, approvalMode, background };
}

export function parseInvokeBody(value: unknown): InvokeBody {
  return parseObjectBody(invokeSchema, value);
}

export const answerRunSchema = z.strictObject({
  tool_call_id: z.string().min(1, 'tool_call_id must be a non-empty string'),
  content: z.string('content must be a string'),
});

/** `POST .../runs/{run_id}/answer` (CONTRACT section 12): the answer itself is judged against its question later. */
export function parseAnswerRunBody(value: unknown): AnswerRunBody {
  return parseObjectBody(answerRunSchema, value);
}

const elicitationAnswerSchema = z.discriminatedUnion('action', [
  z.strictObject({ action: z.literal('accept'), content: z.record(z.string(), z.unknown()) }),
  z.strictObject({ action: z.literal('decline') }),
  z.strictObject({ action: z.literal('cancel') }),
]);

export type ParsedAnswer =
  | { kind: 'permission'; option: string }
  | { kind: 'elicitation'; answer: ElicitationAnswer };

/**
 * Checks an answer against the question it answers: an offered option or `cancel` for a permission; for an
 * elicitation, a JSON action whose accepted content fills the required fields with values of their types.
 */
export function parseAnswer(question: Question, raw: string): ParsedAnswer {
  if (question.kind === 'permission') {
    const option = raw.trim();
    if (option !== CANCEL_ANSWER && !(question.options as string[]).includes(option)) {
      throw new DomainError('invalid_body', `answer must be one of ${[...question.options, CANCEL_ANSWER].join(', ')}`);
    }
    return { kind: 'permission', option };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new DomainError('invalid_body', 'the answer to an elicitation must be a JSON string of {"action": ...}');
  }
  const result = elicitationAnswerSchema.safeParse(parsed);
  if (!result.success) throw new DomainError('invalid_body', `answer: ${describeIssue(result.error)}`);
  if (result.data.action === 'accept') checkFields(question, result.data.content);
  return { kind: 'elicitation', answer: result.data };
}

function checkFields(question: ElicitationQuestion, accepted: Record<string, unknown>): void {
  for (const field of question.fields) {
    const value = Object.hasOwn(accepted, field.name) ? accepted[field.name] : undefined;
    if (value === undefined || value === null) {
      if (field.required) throw new DomainError('invalid_body', `answer: field "${field.name}" is required`);
      continue;
    }
    const fits =
      field.type === 'string'
        ? typeof value === 'string'
        : field.type === 'boolean'
          ? typeof value === 'boolean'
          : field.type === 'integer'
            ? Number.isInteger(value)
            : typeof value === 'number' && Number.isFinite(value);
    if (!fits) throw new DomainError('invalid_body', `answer: field "${field.name}" must be a ${field.type}`);
  }
}
