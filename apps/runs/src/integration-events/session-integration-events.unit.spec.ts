import { boundedText, callerParts, MAX_INTEGRATION_TEXT_BYTES } from '@interns/contracts';
import type { StoredEvent } from '@interns/event-store';
import { evolve, initialState, type SessionEvent, type SessionState } from '@interns/runs-domain';
import { sessionIntegrationEvents } from './session-integration-events';

const at = '2030-01-01T00:00:00.000Z';
const ref = { intern_id: 'i-1', session_id: 's-1', run_id: 'r-1' };

function translate(events: SessionEvent[]) {
  let state: SessionState = initialState();
  return events.map((domainEvent, index) => {
    const event = { streamVersion: index + 1, type: domainEvent.type, data: domainEvent.data } as unknown as StoredEvent;
    const after = evolve(state, domainEvent);
    const drafts = sessionIntegrationEvents({ event, before: state, after });
    state = after;
    return drafts;
  });
}

const opened: SessionEvent = { type: 'SessionOpened', data: { sessionId: 's-1', internId: 'i-1', callerId: 'member:alice', origin: 'chat', at } };
const started: SessionEvent = {
  type: 'RunStarted',
  data: { runId: 'r-1', prompt: 'hi', approvalMode: 'manual', model: 'local/scripted', ownerId: 'o', at },
};

describe('session integration events', () => {
  it('tells of a run start with its caller, and of its completion with its usage; not of its progress', () => {
    const usage = { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 };
    expect(
      translate([
        opened,
        started,
        { type: 'ModelRequested', data: { runId: 'r-1', turn: 1, at } },
        { type: 'OutputProduced', data: { runId: 'r-1', text: 'hello' } },
        { type: 'UsageRecorded', data: { runId: 'r-1', promptTokens: 3, completionTokens: 4 } },
        { type: 'RunFinished', data: { runId: 'r-1', finishReason: 'length', error: null, usage, at } },
      ]),
    ).toEqual([
      [],
      [
        {
          type: 'run.started',
          workspace_id: null,
          data: { ...ref, origin: 'chat', user_id: 'alice', api_key_id: null, model: 'local/scripted', approval_mode: 'manual' },
        },
      ],
      [],
      [],
      [],
      [{ type: 'run.completed', workspace_id: null, data: { ...ref, origin: 'chat', finish_reason: 'length', usage } }],
    ]);
  });

  it('tells of a failure with why, and of a cancellation with the usage so far', () => {
    const error = { reason: 'model_error', message: 'boom' };
    const [, , failed] = translate([opened, started, { type: 'RunFinished', data: { runId: 'r-1', finishReason: 'error', error, usage: null, at } }]);
    expect(failed).toEqual([
      { type: 'run.failed', workspace_id: null, data: { ...ref, origin: 'chat', finish_reason: 'error', usage: null, error } },
    ]);
    const [, , , cancelled] = translate([
      opened,
      started,
      { type: 'UsageRecorded', data: { runId: 'r-1', promptTokens: 1, completionTokens: 1 } },
      { type: 'RunCancelled', data: { runId: 'r-1', reason: 'caller_cancelled', at } },
    ]);
    expect(cancelled).toEqual([
      {
        type: 'run.cancelled',
        workspace_id: null,
        data: { ...ref, origin: 'chat', reason: 'caller_cancelled', usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } },
      },
    ]);
  });

  it('carries a question as asked and a failure\'s message, their model-written text bounded; never output', () => {
    const long = 'q'.repeat(MAX_INTEGRATION_TEXT_BYTES * 10);
    const question = { kind: 'elicitation' as const, message: long, fields: [{ name: 'city', type: 'string' as const, required: true }] };
    const [, , output, asked, failed] = translate([
      opened,
      started,
      { type: 'OutputProduced', data: { runId: 'r-1', text: long } },
      { type: 'QuestionAsked', data: { runId: 'r-1', toolCallId: 't-1', question, expiresAt: at } },
      { type: 'RunFinished', data: { runId: 'r-1', finishReason: 'error', error: { reason: 'model_error', message: long }, usage: null, at } },
    ]);
    expect(output).toEqual([]);
    const published = [asked, failed].map((drafts) => JSON.stringify(drafts));
    expect(published.every((json) => Buffer.byteLength(json) < 2 * MAX_INTEGRATION_TEXT_BYTES)).toBe(true);
    expect(asked[0]).toMatchObject({ type: 'question.opened', data: { arguments: { kind: 'elicitation', fields: question.fields } } });
    expect(JSON.stringify(asked[0].data)).toMatch(/q+… \[truncated \d+ bytes\]/);
    expect(failed[0]).toMatchObject({ type: 'run.failed', data: { error: { reason: 'model_error', message: boundedText(long) } } });
    expect(boundedText(long)).toMatch(/^q+… \[truncated \d+ bytes\]$/);
    expect(Buffer.byteLength(boundedText(long))).toBeLessThanOrEqual(MAX_INTEGRATION_TEXT_BYTES);
    expect(boundedText('short')).toBe('short');
  });

  it('splits the caller into a user or an API key', () => {
    expect(callerParts('member:alice')).toEqual({ user_id: 'alice', api_key_id: null });
    expect(callerParts('key:k1')).toEqual({ user_id: null, api_key_id: 'k1' });
    expect(callerParts('system')).toEqual({ user_id: null, api_key_id: null });
  });
});
