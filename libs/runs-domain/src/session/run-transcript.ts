import type { Question } from '@interns/contracts';
import type { SessionEvent } from './session.events';

/** What the client of a run saw, rebuilt from the session's events. */
export interface RunTranscript {
  runId: string;
  prompts: string[];
  /** All content the run streamed, across its responses, in order. */
  content: string;
  questions: { toolCallId: string; question: Question }[];
  /** `stop`, `error`, `length`, or null while going; a cancellation as `cancelled:<reason>`. */
  ending: string | null;
}

export function runTranscripts(events: SessionEvent[]): RunTranscript[] {
  const transcripts: RunTranscript[] = [];
  const byRun = new Map<string, RunTranscript>();
  for (const event of events) {
    if (event.type === 'SessionOpened') continue;
    if (event.type === 'RunStarted') {
      const transcript: RunTranscript = { runId: event.data.runId, prompts: [event.data.prompt], content: '', questions: [], ending: null };
      byRun.set(event.data.runId, transcript);
      transcripts.push(transcript);
      continue;
    }
    const transcript = byRun.get(event.data.runId);
    if (transcript === undefined) continue;
    switch (event.type) {
      case 'PromptJoined':
        transcript.prompts.push(event.data.text);
        break;
      case 'OutputProduced':
        transcript.content += event.data.text;
        break;
      case 'QuestionAsked':
        transcript.questions.push({ toolCallId: event.data.toolCallId, question: event.data.question });
        break;
      case 'RunFinished':
        transcript.ending = event.data.finishReason;
        break;
      case 'RunCancelled':
        transcript.ending = `cancelled:${event.data.reason}`;
        break;
      default:
        break;
    }
  }
  return transcripts;
}
