import { Agent, type IncomingHttpHeaders, request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';
import { StringDecoder } from 'node:string_decoder';
import { createParser } from 'eventsource-parser';

/**
 * One chat turn as a client sees it: POST, then the event stream, each moment stamped with performance.now()
 * when the socket data carrying it reached this process. The same function measures the platform and the bare
 * server, over one keep-alive connection per target.
 */
export interface TurnTarget {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** One kept-alive socket, as a chat client holding its connection open would use. */
  agent: Agent;
}

export interface TurnTiming {
  /** Just before the request was handed to node:http. */
  sentAt: number;
  headersAt: number;
  /** The first event (the role chunk). */
  firstEventAt: number;
  /** The first event whose delta has content. */
  contentAt: number;
  doneAt: number;
  /** `chatcmpl-<stream id>`; the stream id names the run's NATS stream subject. */
  chunkId: string;
  correlationId: string | null;
  runId: string | null;
  headers: IncomingHttpHeaders;
  /** Every byte of the response body, when asked for (`keepBody`). */
  body: Buffer | null;
}

export function turnTarget(name: string, url: string, headers: Record<string, string>): TurnTarget {
  return { name, url, headers, agent: new Agent({ keepAlive: true, maxSockets: 1 }) };
}

interface ChunkShape {
  id?: string;
  choices?: { delta?: { content?: string }; finish_reason?: string | null }[];
}

/**
 * POSTs `body` and follows the answer to `[DONE]`. Rejects on anything but a 200 event stream whose content
 * is `expectedContent` and whose finish is `stop`, so a refused or broken turn never counts as a fast one.
 */
export function chatTurn(target: TurnTarget, body: string, expectedContent: string, keepBody = false): Promise<TurnTiming> {
  const headers = {
    ...target.headers,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
  };
  return new Promise((resolve, reject) => {
    const sentAt = performance.now();
    const outgoing = httpRequest(target.url, { method: 'POST', headers, agent: target.agent }, (incoming) => {
      const headersAt = performance.now();
      if (incoming.statusCode !== 200 || !(incoming.headers['content-type'] ?? '').startsWith('text/event-stream')) {
        let text = '';
        incoming.setEncoding('utf8');
        incoming.on('data', (part: string) => (text += part));
        incoming.on('end', () => reject(new Error(`${target.name} answered ${incoming.statusCode}: ${text.slice(0, 300)}`)));
        return;
      }
      const kept: Buffer[] = [];
      const decoder = new StringDecoder('utf8');
      let readAt = 0;
      let firstEventAt = 0;
      let contentAt = 0;
      let doneAt = 0;
      let chunkId = '';
      let content = '';
      let finish: string | null = null;
      const parser = createParser({
        onEvent: (event) => {
          if (event.data === '[DONE]') {
            doneAt = readAt;
            return;
          }
          const chunk = JSON.parse(event.data) as ChunkShape;
          if (firstEventAt === 0) {
            firstEventAt = readAt;
            chunkId = chunk.id ?? '';
          }
          const choice = chunk.choices?.[0];
          const text = choice?.delta?.content;
          if (typeof text === 'string' && text !== '') {
            if (contentAt === 0) contentAt = readAt;
            content += text;
          }
          if (choice?.finish_reason) finish = choice.finish_reason;
        },
      });
      incoming.on('data', (part: Buffer) => {
        readAt = performance.now();
        if (keepBody) kept.push(part);
        parser.feed(decoder.write(part));
      });
      incoming.on('error', reject);
      incoming.on('end', () => {
        if (doneAt === 0) return reject(new Error(`${target.name}: the stream ended without [DONE]`));
        if (content !== expectedContent || finish !== 'stop') {
          return reject(new Error(`${target.name}: content ${JSON.stringify(content)}, finish ${finish}; expected ${JSON.stringify(expectedContent)}, stop`));
        }
        resolve({
          sentAt,
          headersAt,
          firstEventAt,
          contentAt,
          doneAt,
          chunkId,
          correlationId: headerOf(incoming.headers, 'x-correlation-id'),
          runId: headerOf(incoming.headers, 'x-run-id'),
          headers: incoming.headers,
          body: keepBody ? Buffer.concat(kept) : null,
        });
      });
    });
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

function headerOf(headers: IncomingHttpHeaders, name: string): string | null {
  const value = headers[name];
  return typeof value === 'string' ? value : null;
}
