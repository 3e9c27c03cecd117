import type { SseEvent } from '../http/sse-reader';
import { readChatStream, type AskedQuestion } from './chat-stream';

const head = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'local/scripted' };
const chunk = (delta: object, finish: string | null = null, extra: object = {}) => JSON.stringify({ ...head, choices: [{ index: 0, delta, finish_reason: finish }], ...extra });
const final = (usage: object | null) => JSON.stringify({ ...head, choices: [], session_id: 's1', usage });
const toolCall = (id: string, args: object) =>
  chunk({ tool_calls: [{ index: 0, id, type: 'function', function: { name: 'service.provide_input', arguments: JSON.stringify(args) } }] });
const permission = { kind: 'permission', operation: 'shell: ls', options: ['allow_once', 'reject_once'] };

async function* events(...data: string[]): AsyncGenerator<SseEvent> {
  let seq = 0;
  for (const item of data) yield item === '[DONE]' ? { data: item } : { data: item, id: String(++seq) };
}

describe('readChatStream', () => {
  it('streams content and ends with the final chunk: session, usage, the last event id', async () => {
    const content: string[] = [];
    const end = await readChatStream(events(chunk({ role: 'assistant' }), chunk({ content: 'he' }), chunk({ content: 'llo' }), chunk({}, 'stop'), final({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }), '[DONE]'), {
      onContent: (text) => content.push(text),
    });
    expect(content).toEqual(['he', 'llo']);
    expect(end).toEqual({ done: true, finish: 'stop', error: null, question: null, sessionId: 's1', usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }, lastEventId: '5' });
  });

  it('hands over the question of a tool_calls finish', async () => {
    const end = await readChatStream(events(chunk({ role: 'assistant' }), toolCall('call_1', permission), chunk({}, 'tool_calls'), final(null), '[DONE]'));
    expect(end.finish).toBe('tool_calls');
    expect(end.question).toEqual({ toolCallId: 'call_1', question: permission, sessionId: 's1' });
  });

  it("tells each question of a run's stream as its response ends, and describes the stream by its last response", async () => {
    const asked: AskedQuestion[] = [];
    const content: string[] = [];
    const end = await readChatStream(
      events(chunk({ role: 'assistant' }), toolCall('call_1', permission), chunk({}, 'tool_calls'), final(null), chunk({ role: 'assistant' }), chunk({ content: 'done' }), chunk({}, 'stop'), final({ prompt_tokens: 0, completion_tokens: 1, total_tokens: 1 }), '[DONE]'),
      { onQuestion: async (question) => void asked.push(question), onContent: (text) => content.push(text) },
    );
    expect(asked.map((question) => question.toolCallId)).toEqual(['call_1']);
    expect(content).toEqual(['done']);
    expect(end).toMatchObject({ done: true, finish: 'stop', question: null });
  });

  it("keeps an error finish's envelope, and reports a stream cut before [DONE]", async () => {
    const error = { code: 410, message: 'the run ended', metadata: { reason: 'run_ended', retryable: false } };
    const failed = await readChatStream(events(chunk({ role: 'assistant' }), chunk({}, 'error', { error }), final(null), '[DONE]'));
    expect(failed).toMatchObject({ done: true, finish: 'error', error });
    const cut = await readChatStream(events(chunk({ role: 'assistant' }), chunk({ content: 'par' })));
    expect(cut).toMatchObject({ done: false, finish: null, lastEventId: '2' });
  });
});
