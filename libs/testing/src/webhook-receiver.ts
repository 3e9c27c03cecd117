import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A Standard Webhooks signature, computed with node:crypto alone (not the service's code). */
export function independentSignature(secret: string, id: string, timestamp: string, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** What the receiver answers a request with: a status, or `hang` (never answer). */
export type ReceiverAnswer = number | 'hang';

/** A local HTTP server standing in for a customer's webhook endpoint: records every request, answers as `answer` says. */
export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  private readonly hanging: ServerResponse[] = [];

  private constructor(
    private readonly server: Server,
    /** Decides each answer; the default answers 200. */
    public answer: (request: ReceivedRequest) => ReceiverAnswer,
  ) {}

  static async start(answer: (request: ReceivedRequest) => ReceiverAnswer = () => 200): Promise<Receiver> {
    const server = createServer();
    const receiver = new Receiver(server, answer);
    server.on('request', (incoming, response: ServerResponse) => {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const request = { method: incoming.method ?? '', url: incoming.url ?? '', headers: incoming.headers, body, at: Date.now() };
        receiver.requests.push(request);
        const status = receiver.answer(request);
        if (status === 'hang') receiver.hanging.push(response);
        else response.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  requestsWithId(id: string): ReceivedRequest[] {
    return this.requests.filter((request) => request.headers['webhook-id'] === id);
  }

  async stop(): Promise<void> {
    for (const response of this.hanging.splice(0)) response.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
