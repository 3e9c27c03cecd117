/**
 * The events client against a real HTTP server speaking the route's contract (interface section 23): event
 * parsing, keepalive comments skipped, a dropped link resumed with Last-Event-ID, a silent one given up on after
 * its idle limit and resumed, and a lasting refusal ending it. (The route itself is tested end to end where it is
 * served.)
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError } from '../errors';
import { ApiClient } from '../http/api-client';
import { readSse } from '../http/sse-reader';
import { followWorkspaceEvents, parseWorkspaceEvent, type WorkspaceEvent } from './workspace-events';

const payload = (id: string, status: string) => ({
  id,
  type: 'intern.status_changed',
  created_at: '2030-01-01T00:00:00.000Z',
  workspace_id: 'w',
  data: { intern_id: 'i', status, previous_status: 'stopped', progress: null },
});
const frame = (id: string, status: string) => `event: intern.status_changed\nid: ${id}\ndata: ${JSON.stringify(payload(id, status))}\n\n`;

let server: Server;
let handle: (request: IncomingMessage, response: ServerResponse) => void;
let client: ApiClient;

beforeEach(async () => {
  server = createServer((request, response) => handle(request, response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  client = new ApiClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`, 'uk_test');
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function stream(response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'text/event-stream' });
}

it('parses events split anywhere, skips keepalives and frames that are not events', async () => {
  const text = `: keepalive\n\n${frame('e1', 'queued')}data: not json\n\n${frame('e2', 'running')}`;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const bytes = new TextEncoder().encode(text);
      for (let at = 0; at < bytes.length; at += 7) controller.enqueue(bytes.slice(at, at + 7));
      controller.close();
    },
  });
  const parsed: (WorkspaceEvent | null)[] = [];
  for await (const event of readSse(body)) parsed.push(parseWorkspaceEvent(event));
  expect(parsed).toEqual([payload('e1', 'queued'), null, payload('e2', 'running')]);
});

it('sends the credential, resumes a dropped link with Last-Event-ID, and stops when aborted', async () => {
  const seen: { auth: string | undefined; lastEventId: string | undefined; path: string | undefined }[] = [];
  handle = (request, response) => {
    seen.push({ auth: request.headers.authorization, lastEventId: request.headers['last-event-id'] as string | undefined, path: request.url });
    stream(response);
    if (seen.length === 1) response.end(`${frame('e1', 'queued')}${frame('e2', 'provisioning')}`);
    else response.write(frame('e3', 'running'));
  };
  const stop = new AbortController();
  const got: string[] = [];
  const reconnects: string[] = [];
  await followWorkspaceEvents(client, {
    signal: stop.signal,
    maxBackoffMs: 50,
    onReconnect: (why) => reconnects.push(why),
    onEvent: (event) => {
      got.push(`${event.id}:${String(event.data.status)}`);
      if (event.id === 'e3') stop.abort();
    },
  });
  expect(got).toEqual(['e1:queued', 'e2:provisioning', 'e3:running']);
  expect(seen).toEqual([
    { auth: 'Bearer uk_test', lastEventId: undefined, path: '/api/v1/events' },
    { auth: 'Bearer uk_test', lastEventId: 'e2', path: '/api/v1/events' },
  ]);
  expect(reconnects).toEqual(['the stream ended']);
}, 10_000);

it('gives up on a link silent past its idle limit and resumes; retries a 503; ends on a 401', async () => {
  let calls = 0;
  handle = (_request, response) => {
    calls++;
    if (calls === 1) {
      stream(response);
      response.write(frame('e1', 'queued'));
      return; // then silence
    }
    if (calls === 2) {
      response.writeHead(503, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { code: 503, message: 'later', metadata: { reason: 'internal_error', retryable: true } } }));
      return;
    }
    response.writeHead(401, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ error: { code: 401, message: 'invalid or missing API key' } }));
  };
  const reconnects: string[] = [];
  const ended = followWorkspaceEvents(client, { signal: new AbortController().signal, idleMs: 200, maxBackoffMs: 20, onEvent: () => undefined, onReconnect: (why) => reconnects.push(why) });
  await expect(ended).rejects.toBeInstanceOf(ApiError);
  await expect(ended).rejects.toMatchObject({ status: 401, message: 'invalid or missing API key' });
  expect(reconnects).toEqual(['the stream sent nothing for 0 s', 'later']);
  expect(calls).toBe(3);
}, 10_000);
