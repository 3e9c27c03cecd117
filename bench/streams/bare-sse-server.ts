import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
// The very head the gateway writes on a chat stream.
import { SSE_HEADERS } from '../../apps/gateway/src/chat/sse-relay';
import { runBareSseProcess, startBareSseServer } from '../shared/bare-sse-process';

/**
 * The baseline of the streams benchmark, run as its own process: plain `node:http`, no framework, no NATS. It
 * answers `POST /sse` (after reading the body, as the gateway does) with the headers of a chat stream and the
 * two events a chat client gets first (the role chunk and one content chunk), then holds the response open,
 * writing nothing more, until the client leaves. It serves `/health/live`, `/health/ready` and `/metrics` (the
 * gateway's prom-client default process metrics, event-loop delay included) so both are measured the same way.
 */

/** What the gateway writes first on a chat stream: `id:` and `data:` of the role chunk, then of the first content. */
function openingEvents(streamId: string): string {
  const identity = { id: `chatcmpl-${streamId}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: 'local/scripted' };
  const role = { ...identity, choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }] };
  const content = { ...identity, choices: [{ index: 0, delta: { content: 'open' }, finish_reason: null }] };
  return `id: 1\ndata: ${JSON.stringify(role)}\n\nid: 2\ndata: ${JSON.stringify(content)}\n\n`;
}

/** Holds a chat stream open after its opening events, as the gateway's relay does before the run writes more. */
function hold(request: IncomingMessage, response: ServerResponse, open: Set<ServerResponse>): void {
  request.resume();
  request.on('end', () => {
    const streamId = randomUUID();
    response.writeHead(200, { 'x-correlation-id': randomUUID(), 'x-run-id': randomUUID(), ...SSE_HEADERS });
    response.flushHeaders();
    response.write(openingEvents(streamId));
    open.add(response);
    response.on('close', () => open.delete(response));
  });
}

export function startStreamsBaseline(port: number): Promise<() => Promise<void>> {
  return startBareSseServer(port, {
    gauge: { name: 'bare_sse_streams_active', help: 'SSE responses held open' },
    route: (request, response, open) => {
      if (request.method !== 'POST' || request.url !== '/sse') return false;
      hold(request, response, open);
      return true;
    },
  });
}

runBareSseProcess('bare SSE server', startStreamsBaseline);
