/**
 * `components.schemas` of runs as resources (CONTRACT section 12): the Run, a page of runs, the question
 * inbox, the answers of cancel and answer, and the answer route's body (from the zod schema the gateway parses
 * it with). As strict as the rest of the document: every key the contract promises is required, none other is
 * allowed, nullable keys are present as `null`.
 */
import type { FinishReason } from '../chat';
import { answerRunSchema } from '../chat-validation';
import { RUN_ORIGINS, RUN_STATUSES } from '../runs';
import { JsonSchema, listPage, NON_EMPTY_STRING, nullable, ref, requestSchemaOf, SESSION_ID, strictObject, TIMESTAMP, UUID_SCHEMA } from './json-schema';

/** The `data` of the last event of a chat response or a run stream (CONTRACT section 6). */
const STREAM_END = '[DONE]';

/** How a run's last response finished (CONTRACT section 12, in its order). */
const RUN_FINISH_REASONS: FinishReason[] = ['stop', 'tool_calls', 'error', 'length'];

/** The eleven keys of a Run, in the order of CONTRACT section 12. */
const RUN_PROPERTIES: Record<string, JsonSchema> = {
  id: UUID_SCHEMA,
  intern_id: UUID_SCHEMA,
  session_id: SESSION_ID,
  origin: { type: 'string', enum: [...RUN_ORIGINS] },
  status: ref('RunStatus'),
  finish_reason: {
    ...nullable({ enum: RUN_FINISH_REASONS }),
    description: 'The finish its readers last got: `null` while no response of the run has finished.',
  },
  model: { type: 'string' },
  usage: { ...nullable(ref('Usage')), description: '`null` while the intern has reported none.' },
  open_question: { ...nullable(ref('RunOpenQuestion')), description: 'The question the run is paused on (`awaiting_input`); otherwise `null`.' },
  created_at: TIMESTAMP,
  ended_at: { ...nullable(TIMESTAMP), description: '`null` while the run is going.' },
};

export const RUN_SCHEMAS: Record<string, JsonSchema> = {
  RunStatus: {
    type: 'string',
    enum: [...RUN_STATUSES],
    description: '`awaiting_input`: paused on an open question (manual chat); `expired`: its question timed out.',
  },
  RunOpenQuestion: strictObject({
    tool_call_id: NON_EMPTY_STRING,
    arguments: ref('ProvideInputArguments'),
    expires_at: { ...TIMESTAMP, description: 'After this (`INTERACTION_DEADLINE_MS` from the asking) the run ends `expired`.' },
  }),
  Run: {
    ...strictObject(RUN_PROPERTIES),
    description:
      "One prompt's work (a chat or an invoke). Visible to the member (or key) that started it, to organization keys of " +
      'its workspace and to the intern keys of its intern; to anyone else it does not exist (404).',
  },
  RunPage: listPage(ref('Run'), 'Newest first (`created_at` desc, then `id` desc).'),
  InboxQuestion: strictObject({
    run_id: UUID_SCHEMA,
    session_id: SESSION_ID,
    tool_call_id: NON_EMPTY_STRING,
    arguments: ref('ProvideInputArguments'),
    expires_at: TIMESTAMP,
  }),
  QuestionInbox: {
    ...strictObject({ data: { type: 'array', items: ref('InboxQuestion') } }),
    description: 'The open questions of the runs visible to the caller, oldest first.',
  },
  AnswerRunRequest: {
    ...requestSchemaOf(answerRunSchema),
    description:
      '`content` as the `tool` message of a chat answer: one offered option or `cancel` (permission); ' +
      '`{"action":"accept","content":{...}}`, `{"action":"decline"}` or `{"action":"cancel"}` as a JSON string (elicitation).',
  },
  ChatCompletionEvent: {
    type: 'object',
    properties: {
      id: {
        type: 'string',
        pattern: '^[1-9][0-9]*$',
        description:
          "The event's `id:` line: the chunk's number in its run, from 1, continuing across the run's responses (after an " +
          'answer the numbering goes on). Absent on `[DONE]`, and on the `stream_severed` error chunk and the final chunk the ' +
          'gateway itself writes when it loses the link to the run.',
      },
      data: {
        oneOf: [ref('ChatCompletionChunk'), { const: STREAM_END, description: 'The last event of every stream: the text `[DONE]`, not JSON.' }],
        description: "The event's `data:` line: one chunk as a line of JSON, or `[DONE]` at the end.",
      },
    },
    required: ['data'],
    additionalProperties: false,
    if: { properties: { data: { const: STREAM_END } } },
    then: { properties: { id: false } },
    description:
      'One server-sent event of a chat response or a run stream (lines `id:` and `data:`, then a blank line). `: keepalive` ' +
      'comments between events carry no event. The stream ends with the event whose `data` is `[DONE]`.',
  },
  Cancelling: strictObject({ cancelling: { const: true } }),
  Answered: strictObject({ answered: { const: true } }),
};
