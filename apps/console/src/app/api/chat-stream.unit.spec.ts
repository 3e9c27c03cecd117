import { applyStreamData, EMPTY_STREAM, questionArgumentsOf, type StreamState } from './chat-stream';

const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'local/scripted', choices, ...extra });
const content = (text: string) => chunk([{ index: 0, delta: { content: text }, finish_reason: null }]);
const permission = JSON.stringify({ kind: 'permission', operation: 'shell: ls', options: ['allow_once', 'allow_always', 'reject_once', 'reject_always'] });
const toolCall = (id: string, args: string) =>
  chunk([{ index: 0, delta: { tool_calls: [{ index: 0, id, type: 'function', function: { name: 'service.provide_input', arguments: args } }] }, finish_reason: null }]);

function replay(events: string[], from: StreamState = EMPTY_STREAM): StreamState {
  return events.reduce(applyStreamData, from);
}

describe('a chat stream read chunk by chunk', () => {
  it('joins content deltas, then takes the session and usage from the final chunk and ends at [DONE]', () => {
    const state = replay([
      chunk([{ index: 0, delta: { role: 'assistant' }, finish_reason: null }]),
      content('Hel'),
      content('lo'),
      chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
      chunk([], { session_id: 's-1', usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }),
      '[DONE]',
    ]);
    expect(state).toMatchObject({ text: 'Hello', finishReason: 'stop', sessionId: 's-1', usage: { total_tokens: 3 }, done: true, question: null });
  });

  it('pauses on a permission question, and the answer stream going on clears it but keeps it in the replayed list', () => {
    const paused = replay([content('about to run\n'), toolCall('call_1', permission), chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }]), '[DONE]']);
    expect(paused.question).toEqual({ toolCallId: 'call_1', arguments: JSON.parse(permission) });
    expect(paused.finishReason).toBe('tool_calls');
    const resumed = replay([content('file-a\n'), chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]), '[DONE]'], paused);
    expect(resumed.question).toBeNull();
    expect(resumed.asked).toHaveLength(1);
    expect(resumed.text).toBe('about to run\nfile-a\n');
  });

  it('keeps the error chunk message (run_ended, stream_severed)', () => {
    const state = replay([chunk([{ index: 0, delta: {}, finish_reason: 'error' }], { error: { code: 410, message: 'the run ended', metadata: { reason: 'run_ended', retryable: false } } })]);
    expect(state).toMatchObject({ error: 'the run ended', finishReason: 'error' });
  });

  it('ignores data that is not JSON and tool calls that are not questions', () => {
    const state = replay(['not json', toolCall('call_2', '{"kind":"other"}'), toolCall('call_3', 'nope')]);
    expect(state).toEqual(EMPTY_STREAM);
  });
});

describe('question arguments', () => {
  it('accepts the two kinds and refuses anything else', () => {
    expect(questionArgumentsOf(permission)?.kind).toBe('permission');
    expect(questionArgumentsOf(JSON.stringify({ kind: 'elicitation', message: 'Name?', fields: [] }))?.kind).toBe('elicitation');
    expect(questionArgumentsOf(JSON.stringify({ kind: 'permission' }))).toBeNull();
    expect(questionArgumentsOf(undefined)).toBeNull();
  });
});
