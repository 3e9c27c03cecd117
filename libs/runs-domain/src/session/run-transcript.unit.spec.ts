import type { ElicitationQuestion, PermissionQuestion } from '@interns/contracts';
import { runTranscripts } from './run-transcript';
import type { RunFinishReason, SessionEvent } from './session.events';

const at = '2026-11-21T10:00:00.000Z';

const permission: PermissionQuestion = { kind: 'permission', operation: 'shell: ls', options: ['allow_once', 'reject_once'] };
const elicitation: ElicitationQuestion = { kind: 'elicitation', message: 'name?', fields: [{ name: 'name', type: 'string', required: true }] };

const opened: SessionEvent = {
  type: 'SessionOpened',
  data: { sessionId: 'session-1', internId: 'intern-1', callerId: 'caller-1', origin: 'chat', at },
};
const started = (runId: string, prompt: string): SessionEvent => ({
  type: 'RunStarted',
  data: { runId, prompt, approvalMode: 'manual', model: 'model-a', ownerId: 'owner-1', at },
});
const output = (runId: string, text: string): SessionEvent => ({ type: 'OutputProduced', data: { runId, text } });
const joined = (runId: string, text: string): SessionEvent => ({ type: 'PromptJoined', data: { runId, text, at } });

describe('run transcripts', () => {
  it('has none for a session without runs', () => {
    expect(runTranscripts([])).toEqual([]);
    expect(runTranscripts([opened])).toEqual([]);
  });

  it('starts with the prompt and no ending while the run is going', () => {
    expect(runTranscripts([opened, started('run-1', 'list files')])).toEqual([
      { runId: 'run-1', prompts: ['list files'], content: '', questions: [], ending: null },
    ]);
  });

  it('adds joined prompts in order', () => {
    const [transcript] = runTranscripts([opened, started('run-1', 'first'), joined('run-1', 'second'), joined('run-1', 'third')]);
    expect(transcript.prompts).toEqual(['first', 'second', 'third']);
  });

  it('concatenates the content of every response in order, and nothing else', () => {
    const events: SessionEvent[] = [
      opened,
      started('run-1', 'go'),
      { type: 'ModelRequested', data: { runId: 'run-1', turn: 1, at } },
      output('run-1', 'Hello, '),
      { type: 'ToolCalled', data: { runId: 'run-1', toolCallId: 't-1', tool: 'shell', arguments: '{"cmd":"ls"}', consent: 'self-drive' } },
      { type: 'ToolCompleted', data: { runId: 'run-1', toolCallId: 't-1', result: 'a.txt' } },
      { type: 'UsageRecorded', data: { runId: 'run-1', promptTokens: 3, completionTokens: 4 } },
      output('run-1', 'world'),
      output('run-1', '!'),
    ];
    expect(runTranscripts(events)[0].content).toBe('Hello, world!');
  });

  it('lists the questions asked, answered or not', () => {
    const events: SessionEvent[] = [
      opened,
      started('run-1', 'go'),
      { type: 'QuestionAsked', data: { runId: 'run-1', toolCallId: 'call-1', question: permission, expiresAt: at } },
      { type: 'QuestionAnswered', data: { runId: 'run-1', toolCallId: 'call-1', answer: { kind: 'permission', option: 'allow_once' }, by: 'caller' } },
      { type: 'QuestionAsked', data: { runId: 'run-1', toolCallId: 'call-2', question: elicitation, expiresAt: at } },
    ];
    expect(runTranscripts(events)[0].questions).toEqual([
      { toolCallId: 'call-1', question: permission },
      { toolCallId: 'call-2', question: elicitation },
    ]);
  });

  it('ends with the finish reason or the cancellation reason', () => {
    const finished = (runId: string, finishReason: RunFinishReason): SessionEvent => ({
      type: 'RunFinished',
      data: {
        runId,
        finishReason,
        error: finishReason === 'error' ? { reason: 'model_unavailable', message: 'no model' } : null,
        usage: null,
        at,
      },
    });
    const endings = runTranscripts([
      opened,
      started('run-1', 'a'),
      finished('run-1', 'stop'),
      started('run-2', 'b'),
      finished('run-2', 'error'),
      started('run-3', 'c'),
      { type: 'QuestionExpired', data: { runId: 'run-3', toolCallId: 'call-1' } },
      { type: 'RunCancelled', data: { runId: 'run-3', reason: 'interaction_deadline', at } },
      started('run-4', 'd'),
      { type: 'RunCancelled', data: { runId: 'run-4', reason: 'client_disconnected', at } },
      started('run-5', 'e'),
      finished('run-5', 'length'),
      started('run-6', 'f'),
    ]).map((transcript) => [transcript.runId, transcript.ending]);
    expect(endings).toEqual([
      ['run-1', 'stop'],
      ['run-2', 'error'],
      ['run-3', 'cancelled:interaction_deadline'],
      ['run-4', 'cancelled:client_disconnected'],
      ['run-5', 'length'],
      ['run-6', null],
    ]);
  });

  it('keeps each run to its own events, in the order runs started', () => {
    const transcripts = runTranscripts([
      opened,
      started('run-1', 'one'),
      output('run-1', 'first'),
      { type: 'RunFinished', data: { runId: 'run-1', finishReason: 'stop', error: null, usage: null, at } },
      started('run-2', 'two'),
      output('run-2', 'second'),
      joined('run-2', 'two more'),
    ]);
    expect(transcripts).toEqual([
      { runId: 'run-1', prompts: ['one'], content: 'first', questions: [], ending: 'stop' },
      { runId: 'run-2', prompts: ['two', 'two more'], content: 'second', questions: [], ending: null },
    ]);
  });

  it('skips events of a run it never saw start', () => {
    expect(runTranscripts([opened, output('run-0', 'stray'), joined('run-0', 'stray'), started('run-1', 'go')])).toEqual([
      { runId: 'run-1', prompts: ['go'], content: '', questions: [], ending: null },
    ]);
  });
});
