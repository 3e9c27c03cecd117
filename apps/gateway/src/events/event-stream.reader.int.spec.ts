/**
 * The event stream reader and the feed's ring over real HTTP sockets: a reader sends, from its position, the
 * entries its principal sees with their frames as they are; a client that reads slowly gets everything; one that
 * reads nothing is cut off when the ring drops entries it still had to send, or after its stall limit; a reader
 * with nothing pending just moves past dropped entries; a failed credential check ends the stream.
 */
import { createServer, get, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Principal } from '@interns/contracts';
import { type EventAudience } from './event-audience';
import { EventRing } from './event-ring';
import { EventStreamReader, type EventStreamReaderOptions } from './event-stream.reader';

const WS = '11111111-1111-4111-8111-111111111111';
const OTHER_WS = '22222222-2222-4222-8222-222222222222';
const INTERN = '0b0e6a52-7d7c-4a8e-9d43-3d7c2f1e9a10';

const alice: Principal = {
  kind: 'user',
  organizationId: 'acme',
  workspaceId: WS,
  memberId: 'alice',
  keyId: 'k-alice',
  internId: null,
  scopes: [],
  chatappInstallRequired: false,
};

const internEvent = (workspaceId = WS): EventAudience => ({ workspaceId, internId: INTERN, run: null });
const runOf = (caller: string | null): EventAudience => ({ workspaceId: WS, internId: INTERN, run: { caller } });

let server: Server;
let port: number;
/** The server side of the next request, for the test to hand to a reader. */
let nextResponse: ((response: ServerResponse) => void) | null = null;
const readers: EventStreamReader[] = [];

beforeAll(async () => {
  server = createServer((_request, response) => nextResponse?.(response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterEach(() => {
  for (const reader of readers.splice(0)) reader.end('shutdown');
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A client request (its answer arrives once the server writes the head) and the server's response to it. */
async function connect(): Promise<{ incoming: Promise<IncomingMessage>; response: ServerResponse }> {
  const response = new Promise<ServerResponse>((resolve) => (nextResponse = resolve));
  const incoming = new Promise<IncomingMessage>((resolve, reject) => get(`http://127.0.0.1:${port}/events`, resolve).on('error', reject));
  return { incoming, response: await response };
}

async function startReader(ring: EventRing, options: Partial<EventStreamReaderOptions> = {}) {
  const { incoming, response } = await connect();
  const reader = new EventStreamReader({
    response,
    principal: alice,
    entries: ring,
    from: ring.next,
    keepaliveIntervalMs: 60_000,
    stallLimitMs: 60_000,
    recheckIntervalMs: 60_000,
    stillAdmitted: async () => true,
    headers: { 'x-correlation-id': 'c-1' },
    ...options,
  });
  readers.push(reader);
  reader.start();
  return { reader, incoming: await incoming };
}

function frame(id: string, size = 0): Buffer {
  return Buffer.from(`id: ${id}\nevent: intern.updated\ndata: {"pad":"${'x'.repeat(size)}"}\n\n`);
}

function push(ring: EventRing, id: string, audience: EventAudience, size = 0) {
  return ring.push({ id, storedAt: Date.now(), audience, frame: frame(id, size) });
}

function collect(incoming: IncomingMessage): { text: () => string } {
  let text = '';
  incoming.setEncoding('utf8');
  incoming.on('data', (part: string) => (text += part));
  return { text: () => text };
}

async function until(condition: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const idsIn = (text: string) => [...text.matchAll(/^id: (.+)$/gm)].map((match) => match[1]);

it('sends the SSE head, then from its position the entries its principal sees, as they come', async () => {
  const ring = new EventRing(1024 * 1024);
  push(ring, 'before', internEvent());
  const { reader, incoming } = await startReader(ring, { from: ring.next });
  expect(incoming.headers['content-type']).toBe('text/event-stream');
  expect(incoming.headers['x-correlation-id']).toBe('c-1');
  const received = collect(incoming);
  for (const [id, audience] of [
    ['mine', internEvent()],
    ['other-workspace', internEvent(OTHER_WS)],
    ['my-run', runOf('member:alice')],
    ['bobs-run', runOf('member:bob')],
    ['unknown-caller', runOf(null)],
    ['last', internEvent()],
  ] as const) {
    push(ring, id, audience);
    reader.wake();
  }
  await until(() => received.text().includes('id: last'), 'the last event');
  expect(idsIn(received.text())).toEqual(['mine', 'my-run', 'last']);
  expect(received.text()).toContain(frame('mine').toString());
});

it('resumes from an earlier position with what the principal sees since', async () => {
  const ring = new EventRing(1024 * 1024);
  const first = push(ring, 'a', internEvent());
  push(ring, 'b', internEvent(OTHER_WS));
  push(ring, 'c', internEvent());
  const { incoming } = await startReader(ring, { from: first.position + 1 });
  const received = collect(incoming);
  await until(() => received.text().includes('id: c'), 'the replay');
  expect(idsIn(received.text())).toEqual(['c']);
});

it('gives a slow client everything, waiting on its socket rather than holding events of its own', async () => {
  const ring = new EventRing(64 * 1024 * 1024);
  const { reader, incoming } = await startReader(ring);
  incoming.pause();
  const count = 64;
  for (let i = 0; i < count; i += 1) {
    push(ring, `e${i}`, internEvent(), 256 * 1024);
    reader.wake();
  }
  // Blocked on its socket by now; then the client reads.
  const received = collect(incoming);
  incoming.resume();
  await until(() => idsIn(received.text()).length === count, 'every event', 20_000);
  expect(idsIn(received.text())).toEqual(Array.from({ length: count }, (_, i) => `e${i}`));
});

it('cuts off a reader that still had dropped entries to send, and lets one with nothing pending move on', async () => {
  const ring = new EventRing(4 * 1024 * 1024);
  const stuck = await startReader(ring);
  stuck.incoming.pause();
  const idle = await startReader(ring, { principal: { ...alice, workspaceId: OTHER_WS } });
  let ended = false;
  void idle.reader.finished.then(() => (ended = true));
  for (let i = 0; i < 64 && (await Promise.race([stuck.reader.finished, Promise.resolve(null)])) === null; i += 1) {
    const first = ring.first;
    push(ring, `e${i}`, internEvent(), 256 * 1024);
    stuck.reader.wake();
    if (ring.first !== first) {
      stuck.reader.dropped(ring.first);
      idle.reader.dropped(ring.first);
    }
  }
  expect(await stuck.reader.finished).toBe('fell_behind');
  expect(ended).toBe(false);
  // The idle reader's place moved past what was dropped: it goes on with the next event of its workspace.
  const received = collect(idle.incoming);
  push(ring, 'for-idle', internEvent(OTHER_WS));
  idle.reader.wake();
  await until(() => received.text().includes('id: for-idle'), 'the idle reader going on');
});

it('cuts off a client that takes nothing for its stall limit', async () => {
  const ring = new EventRing(64 * 1024 * 1024);
  const { reader, incoming } = await startReader(ring, { stallLimitMs: 300 });
  incoming.pause();
  for (let i = 0; i < 64; i += 1) {
    push(ring, `e${i}`, internEvent(), 256 * 1024);
    reader.wake();
  }
  expect(await reader.finished).toBe('stalled');
});

it('writes keepalives in silence and ends the stream when the credential no longer passes', async () => {
  const ring = new EventRing(1024 * 1024);
  let admitted = true;
  const { reader, incoming } = await startReader(ring, { keepaliveIntervalMs: 50, recheckIntervalMs: 50, stillAdmitted: async () => admitted });
  const received = collect(incoming);
  await until(() => received.text().split(': keepalive\n\n').length > 2, 'two keepalives');
  admitted = false;
  expect(await reader.finished).toBe('credential_revoked');
  await until(() => incoming.complete, 'the response to end');
});
