import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
// The very head the gateway writes on an event stream (its readers use the chat relay's).
import { SSE_HEADERS } from '../../apps/gateway/src/chat/sse-relay';
import { runBareSseProcess, startBareSseServer } from '../shared/bare-sse-process';

/**
 * The baseline of the events benchmark, run as its own process: plain `node:http`, no framework, no NATS, no
 * database. `GET /events` answers the SSE head and holds the response. `POST /publish` with `{type, workspace_id,
 * data}` stamps an event (`id`, `created_at` now, as the platform's events carry), makes its frame once, in the
 * shape the gateway's feed writes (`id:`, `event:`, one `data:` line), writes that one buffer to every held
 * response, and only then answers `{id, created_at}`: the least a fan-out of one message can cost. It serves
 * `/health/live`, `/health/ready` and `/metrics` (prom-client's default process metrics, as the gateway's) so
 * both are read the same way.
 */

interface Published {
  type: string;
  workspace_id: string;
  data: Record<string, unknown>;
}

/** Stamps the event, writes its one frame to every held response, then answers `{id, created_at}`. */
function publish(request: IncomingMessage, response: ServerResponse, open: Set<ServerResponse>): void {
  const parts: Buffer[] = [];
  request.on('data', (part: Buffer) => parts.push(part));
  request.on('end', () => {
    let published: Published;
    try {
      published = JSON.parse(Buffer.concat(parts).toString('utf8')) as Published;
    } catch {
      response.writeHead(400).end();
      return;
    }
    const event = { id: randomUUID(), type: published.type, created_at: new Date().toISOString(), workspace_id: published.workspace_id, data: published.data };
    // Made once and shared by every response, as the gateway's feed does (`EventRing` holds one frame per event).
    const frame = Buffer.from(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    for (const held of open) held.write(frame);
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: event.id, created_at: event.created_at }));
  });
}

function hold(response: ServerResponse, open: Set<ServerResponse>): void {
  response.writeHead(200, { 'x-correlation-id': randomUUID(), ...SSE_HEADERS });
  response.flushHeaders();
  open.add(response);
  response.on('close', () => open.delete(response));
}

export function startFanoutServer(port: number): Promise<() => Promise<void>> {
  return startBareSseServer(port, {
    gauge: { name: 'bare_event_streams_active', help: 'Event streams held open' },
    route: (request, response, open) => {
      if (request.method === 'GET' && request.url === '/events') hold(response, open);
      else if (request.method === 'POST' && request.url === '/publish') publish(request, response, open);
      else return false;
      return true;
    },
  });
}

runBareSseProcess('bare fan-out server', startFanoutServer);
