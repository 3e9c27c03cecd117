import type { ConversationMessage, ModelStreamEvent, ModelToolCall } from '../model-provider';
import { ScriptedModelProvider } from './scripted.provider';

const provider = new ScriptedModelProvider();

async function turn(messages: ConversationMessage[], signal = new AbortController().signal) {
  const events: ModelStreamEvent[] = [];
  for await (const event of provider.streamTurn({ model: 'local/scripted', messages, tools: [], signal })) {
    events.push(event);
  }
  return events;
}

const contentOf = (events: ModelStreamEvent[]) =>
  events.flatMap((event) => (event.type === 'content' ? [event.text] : []));
const toolCallsOf = (events: ModelStreamEvent[]) =>
  events.flatMap((event) => (event.type === 'tool_call' ? [event.call] : []));
const user = (content: string): ConversationMessage => ({ role: 'user', content });
const afterCall = (call: ModelToolCall, result: string, content = ''): ConversationMessage[] => [
  { role: 'assistant', content, toolCalls: [call] },
  { role: 'tool', toolCallId: call.id, content: result },
];

describe('ScriptedModelProvider', () => {
  it('echoes a single line exactly, then reports usage', async () => {
    const events = await turn([user('hello')]);
    expect(events).toEqual([
      { type: 'content', text: 'hello' },
      { type: 'usage', promptTokens: 1, completionTokens: 1 },
    ]);
  });

  it('streams /say text and joins the pieces of a turn by newlines, skipping blank lines', async () => {
    const events = await turn([user('/say Hello there\n\nplain line   \n/say  second')]);
    expect(contentOf(events)).toEqual(['Hello there', '\nplain line', '\nsecond']);
    expect(contentOf(events).join('')).toBe('Hello there\nplain line\nsecond');
  });

  it('echoes malformed directives as text', async () => {
    const events = await turn([user('/sleep abc\n/shell\n/say\n/unknown thing\n/sayhi')]);
    expect(contentOf(events)).toEqual(['/sleep abc', '\n/shell', '\n/say', '\n/unknown thing', '\n/sayhi']);
    expect(toolCallsOf(events)).toEqual([]);
  });

  it('acts on the last user message only', async () => {
    const events = await turn([
      { role: 'system', content: 'you are an intern' },
      user('/shell ls'),
      { role: 'assistant', content: 'earlier answer', toolCalls: [] },
      user('now this'),
    ]);
    expect(contentOf(events)).toEqual(['now this']);
    expect(toolCallsOf(events)).toEqual([]);
  });

  it('ends the turn at /shell with a tool call, and streams its output first in the next turn', async () => {
    const script = user('/say Listing:\n/shell ls -la /tmp\n/say Done.\nbye');
    const first = await turn([script]);
    expect(contentOf(first)).toEqual(['Listing:']);
    const [call] = toolCallsOf(first);
    expect(call).toEqual({
      id: expect.stringMatching(/^call_[0-9a-f]+$/),
      name: 'shell',
      arguments: JSON.stringify({ command: 'ls -la /tmp' }),
    });
    expect(first.at(-1)?.type).toBe('usage');

    const second = await turn([script, ...afterCall(call, 'a.txt\nb.txt', 'Listing:')]);
    expect(contentOf(second)).toEqual(['a.txt\nb.txt', '\nDone.', '\nbye']);
    expect(toolCallsOf(second)).toEqual([]);
  });

  it('walks several tool directives turn by turn, each with a fresh call id', async () => {
    const script = user('/shell echo one\n/shell echo two');
    const first = await turn([script]);
    const [one] = toolCallsOf(first);
    expect(contentOf(first)).toEqual([]);
    const second = await turn([script, ...afterCall(one, 'one\n')]);
    expect(contentOf(second)).toEqual(['one\n']);
    const [two] = toolCallsOf(second);
    expect(JSON.parse(two.arguments)).toEqual({ command: 'echo two' });
    expect(two.id).not.toBe(one.id);
    const third = await turn([script, ...afterCall(one, 'one\n'), ...afterCall(two, 'two\n')]);
    expect(contentOf(third)).toEqual(['two\n']);
    expect(toolCallsOf(third)).toEqual([]);
  });

  it('asks with /ask for a required answer field, then streams the answer', async () => {
    const script = user('/ask What is your name?\n/say Thanks');
    const [call] = toolCallsOf(await turn([script]));
    expect(call.name).toBe('ask_user');
    expect(JSON.parse(call.arguments)).toEqual({
      message: 'What is your name?',
      fields: [{ name: 'answer', type: 'string', required: true }],
    });
    const next = await turn([script, ...afterCall(call, 'Ada')]);
    expect(contentOf(next).join('')).toBe('Ada\nThanks');
  });

  it('pauses on /sleep', async () => {
    const started = Date.now();
    const events = await turn([user('/sleep 80\n/say awake')]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(75);
    expect(contentOf(events)).toEqual(['awake']);
  });

  it('stops a /sleep promptly when the request is aborted, throwing the signal reason', async () => {
    const controller = new AbortController();
    const reason = new Error('run cancelled');
    setTimeout(() => controller.abort(reason), 30);
    const started = Date.now();
    await expect(turn([user('/say before\n/sleep 10000\n/say after')], controller.signal)).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('refuses to start on an aborted signal', async () => {
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    await expect(turn([user('hello')], controller.signal)).rejects.toThrow('gone');
  });

  it('counts usage as whitespace-separated words, deterministically', async () => {
    const messages: ConversationMessage[] = [
      { role: 'system', content: 'be brief  please' },
      user('/say two words\n/shell echo hi'),
    ];
    const events = await turn(messages);
    const usage = events.at(-1);
    // Prompt: 3 + 6 words. Completion: "two words" + {"command":"echo hi"} (2 words).
    expect(usage).toEqual({ type: 'usage', promptTokens: 9, completionTokens: 4 });
    expect(await turn(messages).then((again) => again.at(-1))).toEqual(usage);
  });
});
