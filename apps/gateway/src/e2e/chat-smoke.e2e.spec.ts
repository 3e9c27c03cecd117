import { randomUUID } from 'node:crypto';
import { Platform, SseResponse } from '@interns/testing';
import { IDENTITIES, KEYS } from './identities.fixture';

let platform: Platform;
let internId: string;

beforeAll(async () => {
  platform = await Platform.start({ env: { STREAM_HEARTBEAT_MS: '200' } });
  await platform.applyIdentities(IDENTITIES);
  const created = await platform.api('/api/v1/interns', { token: KEYS.alice, json: { name: `c-${randomUUID().slice(0, 8)}`, provision: true } });
  internId = created.body.id;
  for (let i = 0; i < 200; i++) {
    const got = await platform.api(`/api/v1/interns/${internId}`, { token: KEYS.alice });
    if (got.body.status === 'running') break;
    await new Promise((r) => setTimeout(r, 50));
  }
}, 60_000);
afterAll(() => platform?.stop());

test('echo', async () => {
  const res = await platform.post(`/api/v1/interns/${internId}/chat/completions`, KEYS.alice, {
    stream: true,
    messages: [{ role: 'user', content: '/say hi\n/shell echo out\nbye\n/ask name?' }],
  });
  expect(res).toBeInstanceOf(SseResponse);
  const stream = res as SseResponse;
  const events = await stream.all();
  console.log(events.join('\n'));
  const last = stream.chunks[stream.chunks.length - 1];
  const call = stream.chunks.find((c) => c.choices[0]?.delta?.tool_calls)?.choices[0].delta.tool_calls[0];
  const answer = await platform.post(`/api/v1/interns/${internId}/chat/completions`, KEYS.alice, {
    stream: true,
    session_id: last.session_id,
    messages: [{ role: 'tool', tool_call_id: call.id, content: JSON.stringify({ action: 'accept', content: { answer: 'Bob' } }) }],
  });
  const second = answer as SseResponse;
  console.log((await second.all()).join('\n'));
}, 30_000);
