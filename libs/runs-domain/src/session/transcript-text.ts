import { QUESTION_WORDING } from '@interns/contracts';
import type { SessionEventType } from './session.events';

/** A place in an event's `data` holding transcript text, and the value it holds once the transcript is purged. */
export interface TranscriptField {
  path: readonly string[];
  /** Of the field's own type, so a purged event still has its shape for the decider, projections and translators. */
  purged: '' | readonly [] | Readonly<Record<string, never>>;
}

/**
 * Where the session events hold a run's transcript (CONTRACT section 22): what was said to the intern and what it
 * said and did (prompts, streamed output, tool arguments and results, a question's wording, an elicitation's
 * answer, a failure's message). Everything else is the run's metadata or what the decider folds (ids, times,
 * model, usage, statuses, a question's kind, a permission answer's option) and stays. Typed by every event type,
 * so a new event does not compile until it says where its text is.
 */
export const TRANSCRIPT_FIELDS: { readonly [T in SessionEventType]: readonly TranscriptField[] } = {
  SessionOpened: [],
  RunStarted: [{ path: ['prompt'], purged: '' }],
  PromptJoined: [{ path: ['text'], purged: '' }],
  ModelRequested: [],
  OutputProduced: [{ path: ['text'], purged: '' }],
  ToolCalled: [{ path: ['arguments'], purged: '' }],
  ToolCompleted: [{ path: ['result'], purged: '' }],
  ToolRefused: [
    { path: ['arguments'], purged: '' },
    { path: ['result'], purged: '' },
  ],
  QuestionAsked: QUESTION_WORDING.map(({ key, purged }) => ({ path: ['question', key], purged })),
  QuestionAnswered: [{ path: ['answer', 'answer', 'content'], purged: {} }],
  QuestionExpired: [],
  UsageRecorded: [],
  RunFinished: [{ path: ['error', 'message'], purged: '' }],
  RunCancelled: [],
};
