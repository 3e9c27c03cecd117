import { Agent, type IncomingMessage, request as httpRequest } from 'node:http';

/** One socket per held response, never reused or pooled away: a held response owns its connection. */
const agent = new Agent({ keepAlive: false, maxSockets: Infinity });

export interface HeldResponse {
  /** Whether the server ended the response (or the connection broke) while it was held. */
  endedEarly(): boolean;
  close(): void;
}

export interface HoldRequest {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
  /** Names the response in errors ("stream 3", "a subscriber"). */
  label: string;
}

/**
 * Sends one request whose response is to be held open (an SSE stream), on a socket of its own. A 200 answer is
 * handed to `follow`, which reads it and calls `opened` once the response counts as open (its head, or a first
 * event); the promise then resolves. Anything else fails it: another status (with the start of its text), an
 * error, an end before `opened`, or no `opened` within `timeoutMs`.
 */
export function holdResponse(request: HoldRequest, follow: (incoming: IncomingMessage, opened: () => void) => void): Promise<HeldResponse> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let closing = false;
    let ended = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outgoing.destroy();
      reject(error);
    };
    const timer = setTimeout(() => fail(new Error(`${request.label} was not open within ${request.timeoutMs} ms`)), request.timeoutMs);
    const outgoing = httpRequest(request.url, { method: request.method, headers: request.headers, agent }, (incoming) => {
      incoming.setEncoding('utf8');
      if (incoming.statusCode !== 200) {
        let text = '';
        incoming.on('data', (part: string) => (text += part));
        incoming.on('end', () => fail(new Error(`${request.label} answered ${incoming.statusCode}: ${text.slice(0, 300)}`)));
        return;
      }
      const onEnd = () => {
        ended = true;
        fail(new Error(`${request.label} ended before it was open`));
      };
      incoming.on('end', onEnd);
      incoming.on('close', onEnd);
      incoming.on('error', onEnd);
      follow(incoming, () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({
          endedEarly: () => ended && !closing,
          close: () => {
            closing = true;
            outgoing.destroy();
          },
        });
      });
    });
    outgoing.on('error', (error) => {
      ended = true;
      fail(error);
    });
    outgoing.end(request.body);
  });
}
