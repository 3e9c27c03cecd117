// Longer than 300 lines on purpose: one home for every chat e2e helper, so the e2e files share one vocabulary.
/**
 * Helpers for end-to-end tests of chat (CONTRACT section 6): interns to talk to, request bodies, answers to
 * questions, and one check of the whole chunk sequence of a response. Shared by several e2e files; keep the
 * exported names and their meaning stable.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Platform } from '../platform';
import { SseResponse } from '../sse-client';
import type { JsonAnswer } from '../sse-client';
import { KEYS, WS_MAIN } from './platform-identities.fixture';

export const API = '/api/v1';
export const SCRIPTED_MODEL = 'local/scripted';
export const PROVIDE_INPUT = 'service.provide_input';
export const PERMISSION_OPTIONS = ['allow_once', 'allow_always', 'reject_once', 'reject_always'];
/** `chatcmpl-<uuid>`. */
export const CHUNK_ID = /^chatcmpl-[0-9a-f-]{36}$/;
export const TOOL_CALL_ID = /^call_[0-9A-Za-z_-]+$/;

export type ChatBody = Record<string, unknown>;
export type ApprovalMode = 'manual' | 'self-drive';

export const chatPath = (internId: string) => `${API}/interns/${internId}/chat/completions`;

/** The error envelope of CONTRACT section 2, any message. */
export const refusal = (status: number, reason: string, retryable = false) => ({
  error: { code: status, message: expect.any(String), metadata: { reason, retryable } },
});

/** The `arguments` (parsed) of the permission question the shell asks in `manual` mode. */
export const permissionArguments = (command: string) => ({
  kind: 'permission',
  operation: `shell: ${command}`,
  options: PERMISSION_OPTIONS,
});

/** The `arguments` (parsed) of the question `/ask <message>` asks. */
export const elicitationArguments = (message: string) => ({
  kind: 'elicitation',
  message,
  fields: [{ name: 'answer', type: 'string', required: true }],
});

/** Contents of a tool reply to an elicitation. */
export const elicitationReply = {
  accept: (content: Record<string, unknown>) => JSON.stringify({ action: 'accept', content }),
  decline: () => JSON.stringify({ action: 'decline' }),
  cancel: () => JSON.stringify({ action: 'cancel' }),
};

// ---- interns ----

/** Creates an intern (not provisioned: it stays `stopped`) and returns its id. */
export async function createIntern(platform: Platform, token: string = KEYS.alice, provision = false): Promise<string> {
  const created = await platform.api(`${API}/interns`, {
    token,
    json: { name: `chat-${randomUUID().slice(0, 8)}`, provision },
  });
  if (created.status !== 201) throw new Error(`create answered ${created.status}: ${created.text}`);
  return created.body.id as string;
}

/** Creates and provisions an intern, returning its id once it is `running` (about 2 s; far longer on a loaded machine). */
export async function createRunningIntern(platform: Platform, token: string = KEYS.alice, timeoutMs = 60_000): Promise<string> {
  const id = await createIntern(platform, token, true);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await platform.api(`${API}/interns/${id}`, { token });
    if (got.body?.status === 'running') return id;
    if (Date.now() > deadline) throw new Error(`intern ${id} not running within ${timeoutMs} ms: ${got.text}`);
    await sleep(50);
  }
}

// ---- requests ----

export function promptBody(text: string, options: { sessionId?: string; approvalMode?: ApprovalMode } = {}): ChatBody {
  const body: ChatBody = { stream: true, messages: [{ role: 'user', content: text }] };
  if (options.sessionId !== undefined) body.session_id = options.sessionId;
  if (options.approvalMode !== undefined) body.approval_mode = options.approvalMode;
  return body;
}

/** A tool reply as an OpenAI client sends it: the assistant message echoing the call, then the tool message. */
export function answerBody(sessionId: string, toolCallId: string, content: string): ChatBody {
  return {
    stream: true,
    session_id: sessionId,
    messages: [
      { role: 'assistant', content: null, tool_calls: [{ id: toolCallId, type: 'function', function: { name: PROVIDE_INPUT, arguments: '{}' } }] },
      { role: 'tool', tool_call_id: toolCallId, content },
    ],
  };
}

export function chat(platform: Platform, internId: string, body: unknown, token: string = KEYS.alice): Promise<SseResponse | JsonAnswer> {
  return platform.post(chatPath(internId), token, body);
}

/** Posts and insists on an event stream (a JSON answer fails with its body in the message). */
export async function openStream(platform: Platform, internId: string, body: unknown, token: string = KEYS.alice): Promise<SseResponse> {
  const response = await chat(platform, internId, body, token);
  return asStream(response);
}

export function asStream(response: SseResponse | JsonAnswer): SseResponse {
  if (response instanceof SseResponse) return response;
  throw new Error(`expected an event stream, got ${response.status} ${JSON.stringify(response.body)}`);
}

export function asJson(response: SseResponse | JsonAnswer): JsonAnswer {
  if (!(response instanceof SseResponse)) return response;
  response.close();
  throw new Error(`expected a JSON answer, got a ${response.status} event stream: ${JSON.stringify(response.events)}`);
}

export function prompt(
  platform: Platform,
  internId: string,
  text: string,
  options: { sessionId?: string; approvalMode?: ApprovalMode; token?: string } = {},
): Promise<SseResponse> {
  return openStream(platform, internId, promptBody(text, options), options.token);
}

export function answer(
  platform: Platform,
  internId: string,
  sessionId: string,
  toolCallId: string,
  content: string,
  token: string = KEYS.alice,
): Promise<SseResponse | JsonAnswer> {
  return chat(platform, internId, answerBody(sessionId, toolCallId, content), token);
}

/** Resolves once the response's first event (the role chunk) arrived. */
export function untilRole(stream: SseResponse, timeoutMs = 10_000): Promise<void> {
  return stream.until((events) => events.length >= 1, timeoutMs);
}

// ---- responses ----

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** What a client learns from one well-formed response. */
export interface StreamSummary {
  id: string;
  created: number;
  sessionId: string;
  /** `length`: the run reached MAX_TOOL_CALLS_PER_RUN (a finish shaped like `stop`). */
  finishReason: 'stop' | 'length' | 'tool_calls' | 'error';
  /** Every `delta.content`, joined. */
  content: string;
  /** The tool call before a `tool_calls` finish, its arguments parsed; null otherwise. */
  toolCall: { id: string; arguments: unknown } | null;
  usage: Usage | null;
  /** The top-level error of an `error` finish; null otherwise. */
  error: { code: number; message: string; metadata: { reason: string; retryable: boolean } } | null;
}

/** Waits for the end of the response, checks it chunk by chunk against CONTRACT section 6, and sums it up. */
export async function readStream(stream: SseResponse, timeoutMs = 10_000): Promise<StreamSummary> {
  await stream.all(timeoutMs);
  return checkStream(stream);
}

/**
 * Checks a response that has ended: 200 text/event-stream; a role chunk, content chunks, exactly one finish
 * chunk (a `tool_calls` finish preceded by the whole tool call), the final chunk with `choices: []`,
 * `session_id` and `usage`, then `[DONE]` as the last event. Every chunk has exactly the contract's keys.
 */
export function checkStream(stream: SseResponse): StreamSummary {
  expect(stream.isEnded).toBe(true);
  expect(stream.status).toBe(200);
  expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
  const events = stream.events;
  expect(events.indexOf('[DONE]')).toBe(events.length - 1);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- chunks are checked shape by shape below
  const chunks: any[] = events.slice(0, -1).map((data) => JSON.parse(data));
  expect(chunks.length).toBeGreaterThanOrEqual(3);

  const first = chunks[0];
  expect(first.id).toMatch(CHUNK_ID);
  expect(Number.isInteger(first.created)).toBe(true);
  const head = { id: first.id, object: 'chat.completion.chunk', created: first.created, model: SCRIPTED_MODEL };
  const choice = (delta: unknown, finishReason: string | null = null) => [{ index: 0, delta, finish_reason: finishReason }];

  expect(first).toEqual({ ...head, choices: choice({ role: 'assistant' }) });
  const final = chunks[chunks.length - 1];
  const finish = chunks[chunks.length - 2];
  const finishReason = finish.choices?.[0]?.finish_reason;
  expect(['stop', 'length', 'tool_calls', 'error']).toContain(finishReason);
  if (finishReason === 'error') {
    expect(finish).toEqual({
      ...head,
      choices: choice({}, 'error'),
      error: { code: expect.any(Number), message: expect.any(String), metadata: { reason: expect.any(String), retryable: expect.any(Boolean) } },
    });
    expect(Number.isInteger(finish.error.code)).toBe(true);
  } else {
    expect(finish).toEqual({ ...head, choices: choice({}, finishReason) });
  }

  let middle = chunks.slice(1, -2);
  let toolCall: StreamSummary['toolCall'] = null;
  if (finishReason === 'tool_calls') {
    const call = middle[middle.length - 1];
    middle = middle.slice(0, -1);
    expect(call).toEqual({
      ...head,
      choices: choice({
        tool_calls: [
          { index: 0, id: expect.stringMatching(TOOL_CALL_ID), type: 'function', function: { name: PROVIDE_INPUT, arguments: expect.any(String) } },
        ],
      }),
    });
    const delta = call.choices[0].delta.tool_calls[0];
    toolCall = { id: delta.id, arguments: JSON.parse(delta.function.arguments) };
  }
  for (const chunk of middle) expect(chunk).toEqual({ ...head, choices: choice({ content: expect.any(String) }) });

  expect(final).toEqual({ ...head, choices: [], session_id: expect.any(String), usage: final.usage === null ? null : expect.any(Object) });
  expect(final.session_id.length).toBeGreaterThan(0);
  if (finishReason === 'tool_calls') expect(final.usage).toBeNull();
  if (finishReason === 'stop' || finishReason === 'length') expect(final.usage).not.toBeNull();
  if (final.usage !== null) checkUsage(final.usage);

  return {
    id: first.id,
    created: first.created,
    sessionId: final.session_id,
    finishReason,
    content: middle.map((chunk) => chunk.choices[0].delta.content as string).join(''),
    toolCall,
    usage: final.usage,
    error: finishReason === 'error' ? finish.error : null,
  };
}

function checkUsage(usage: Usage): void {
  expect(Object.keys(usage).sort()).toEqual(['completion_tokens', 'prompt_tokens', 'total_tokens']);
  for (const value of Object.values(usage)) {
    expect(Number.isInteger(value)).toBe(true);
    expect(value).toBeGreaterThanOrEqual(0);
  }
  expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
}

// ---- the runs service's records (integration peeks) ----

/** Rows of `sql` on the platform's database. */
export async function query<T>(platform: Platform, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: platform.database.url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/** The session's events as `{type, data}`, in stream order (what `runTranscripts` reads). */
export function sessionEvents(platform: Platform, sessionId: string): Promise<{ type: string; data: unknown }[]> {
  return query(platform, 'SELECT type, data FROM runs.events WHERE stream_id = $1 ORDER BY stream_version', [`session-${sessionId}`]);
}

/** The session's events grouped by the transaction that appended them, in order (event types only). */
export async function sessionTransactions(platform: Platform, sessionId: string): Promise<string[][]> {
  const rows: { transaction_id: string; type: string }[] = await query(
    platform,
    'SELECT transaction_id::text, type FROM runs.events WHERE stream_id = $1 ORDER BY stream_version',
    [`session-${sessionId}`],
  );
  const groups: string[][] = [];
  let current: string | null = null;
  for (const row of rows) {
    if (row.transaction_id !== current) groups.push([]);
    current = row.transaction_id;
    groups[groups.length - 1]?.push(row.type);
  }
  return groups;
}

/**
 * The session's runs in the read model, oldest first, each as `active`, `finished` with its finish, or `cancelled`
 * with `cancelled:<reason>`: the row's `end_reason` (its RUN_ENDINGS key) in the words the specs assert.
 */
export function sessionRuns(platform: Platform, sessionId: string): Promise<{ status: string; finish_reason: string | null }[]> {
  return query(
    platform,
    `SELECT CASE WHEN end_reason IS NULL THEN 'active' WHEN end_reason IN ('stop', 'length', 'error') THEN 'finished' ELSE 'cancelled' END AS status,
            CASE WHEN end_reason IS NULL OR end_reason IN ('stop', 'length', 'error') THEN end_reason ELSE 'cancelled:' || end_reason END AS finish_reason
       FROM runs.runs WHERE session_id = $1 ORDER BY started_at`,
    [sessionId],
  );
}

/** Polls `probe` until `accept` holds; fails with the last value seen. */
export async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (accept(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last: ${JSON.stringify(value)}`);
    await sleep(50);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A personal OAuth access token of `member` in `workspace` with `scope`, from the local issuer (`admin oauth-token`). */
export async function oauthToken(platform: Platform, scope: string, member = 'alice', workspace = WS_MAIN): Promise<string> {
  const issued = await platform.admin<{ access_token: string }>('oauth-token', '--member', member, '--workspace', workspace, '--scope', scope);
  return issued.access_token;
}
