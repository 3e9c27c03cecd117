/**
 * The operations of runs as resources (CONTRACT section 12), one path item per route (paths relative to
 * `API_BASE_PATH`): an intern's runs, one run, its stream, cancel and answer, and the question inbox. The
 * intern checks come first (404 for an intern the credential cannot see); then a run the caller may not see
 * does not exist (404), like a run id that is not a uuid.
 */
import { ref } from './json-schema';
import {
  BODY_RULES,
  INTERN_ACCESS,
  jsonBody,
  NO_BODY,
  NO_BODY_RULES,
  OpenApiPathItem,
  parameterRef,
  SERVICE_FAILURES,
} from './openapi-operation';
import { errorResponses, eventStreamResponse, jsonResponse } from './openapi-responses';

const RUN_VISIBILITY =
  'A run is visible to the member (or key) that started it, to organization keys of its workspace and to the intern keys ' +
  'of its intern; to anyone else it does not exist (404).';
const ONE_RUN = [parameterRef('InternId'), parameterRef('RunId')];

export const runs: OpenApiPathItem = {
  parameters: [parameterRef('InternId')],
  get: {
    operationId: 'listRuns',
    tags: ['Runs'],
    summary: "List the intern's runs the credential can see",
    description: `Newest first, by the list rules of the intern list. Unknown query parameters are ignored. ${RUN_VISIBILITY}`,
    parameters: ['Limit', 'RunStatus', 'StartingAfter', 'SessionId'].map(parameterRef),
    responses: {
      '200': jsonResponse('A page of runs.', ref('RunPage')),
      ...errorResponses([...INTERN_ACCESS, 'invalid_body', ...SERVICE_FAILURES]),
    },
  },
};

export const oneRun: OpenApiPathItem = {
  parameters: ONE_RUN,
  get: {
    operationId: 'getRun',
    tags: ['Runs'],
    summary: 'Get a run',
    description: RUN_VISIBILITY,
    responses: {
      '200': jsonResponse('The run.', ref('Run')),
      ...errorResponses([...INTERN_ACCESS, ...SERVICE_FAILURES]),
    },
  },
};

export const runStream: OpenApiPathItem = {
  parameters: ONE_RUN,
  get: {
    operationId: 'streamRun',
    tags: ['Runs'],
    summary: "Follow a run's chunks: a replay, then live until `[DONE]`",
    description:
      "Replays the run's chunks from the first (or after `starting_after`, else after `Last-Event-ID`), then follows them live " +
      "until the run's final chunk and `[DONE]`; a run that has ended replays and ends at once. Several readers may follow one " +
      'run; a reader closing never cancels it. Chunks are kept for `RUN_REPLAY_RETENTION_MS` (default 86400000) after the run ' +
      'ends; later: 410 `run_expired`. A `: keepalive` comment is written after `KEEPALIVE_INTERVAL_MS` of silence. One caller ' +
      'may hold `RUN_STREAM_READERS_PER_CALLER` (default 16) run streams open on one gateway; beyond: 429 `rate_limited`.',
    parameters: [parameterRef('ChunkStartingAfter'), parameterRef('LastEventId')],
    responses: {
      '200': eventStreamResponse(
        "Server-sent events: the run's chunks with their `id:` (the same events, ids included, its chat responses carried), " +
          'then `data: [DONE]` (no id).',
      ),
      ...errorResponses([...INTERN_ACCESS, 'invalid_body', 'run_expired', 'rate_limited', ...SERVICE_FAILURES]),
    },
  },
};

export const cancelRun: OpenApiPathItem = {
  parameters: ONE_RUN,
  post: {
    operationId: 'cancelRun',
    tags: ['Runs'],
    summary: 'Cancel a going run',
    description:
      'The run ends `cancelled`: streams attached to it get a `stop` finish, the final chunk and `[DONE]`. A run that has ended: ' +
      '409 `run_not_active`.',
    requestBody: NO_BODY,
    responses: {
      '202': jsonResponse('Cancelling.', ref('Cancelling')),
      ...errorResponses([...INTERN_ACCESS, ...NO_BODY_RULES, 'run_not_active', ...SERVICE_FAILURES]),
    },
  },
};

export const answerRun: OpenApiPathItem = {
  parameters: ONE_RUN,
  post: {
    operationId: 'answerRun',
    tags: ['Runs'],
    summary: "Answer the run's open question",
    description:
      'As answering in chat, with no stream attached: the run resumes, and its stream route follows it. An answer the question ' +
      'does not offer: 400 (the question stays open).',
    requestBody: jsonBody('AnswerRunRequest'),
    responses: {
      '202': jsonResponse('The answer reached the run.', ref('Answered')),
      ...errorResponses([...INTERN_ACCESS, ...BODY_RULES, 'interaction_unknown', 'interaction_not_pending', ...SERVICE_FAILURES]),
    },
  },
};

export const questions: OpenApiPathItem = {
  parameters: [parameterRef('InternId')],
  get: {
    operationId: 'listQuestions',
    tags: ['Runs'],
    summary: 'The open questions of the runs the credential can see',
    description: `Oldest first. ${RUN_VISIBILITY}`,
    responses: {
      '200': jsonResponse('The question inbox.', ref('QuestionInbox')),
      ...errorResponses([...INTERN_ACCESS, ...SERVICE_FAILURES]),
    },
  },
};
