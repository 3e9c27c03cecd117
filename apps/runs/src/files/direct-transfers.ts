import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { Logger } from '@nestjs/common';
import { FILE_DIRECT_ERROR_HEADER, FILE_DIRECT_TOKEN_TTL_MS, type DirectTransfer } from '@interns/contracts';
import { serviceErrorPayloadOf } from '@interns/messaging';
import type { FileDownload, FileUpload } from './workspace-files';

export interface DirectTransfersOptions {
  /** FILE_TRANSFER_HOST and FILE_TRANSFER_PORT (0 here: any free port, for tests). */
  host: string;
  port: number;
  /** FILE_TRANSFER_ADVERTISED_HOST: the address the gateway is told. */
  advertisedHost: string;
  /** FILE_TRANSFER_STALL_MS: a connection that moves nothing for this long is cut, and its transfer aborted. */
  stallMs: number;
  /** How long an offer waits for its connection (FILE_DIRECT_TOKEN_TTL_MS; shorter in tests). */
  tokenTtlMs?: number;
}

/** A transfer opened over NATS and waiting for the gateway's connection. */
interface Offer {
  token: Buffer;
  method: 'GET' | 'PUT';
  serve(request: IncomingMessage, response: ServerResponse): Promise<void>;
  /** Gives the transfer up without serving it (expired, or shutdown). */
  abort(): Promise<void>;
  expiry: NodeJS.Timeout;
}

const PATH_PREFIX = '/files/transfers/';

/**
 * File bodies straight between the gateway and this replica (interface section 21; docs/architecture.md, Files):
 * the NATS open step checks who may do what and offers the transfer here with a one-use token that only its reply
 * carries, and the gateway streams the body over plain HTTP, with TCP's own backpressure and no broker between.
 * A wrong token answers 401 and touches nothing; an unknown, used or expired one 404. A connection that moves
 * nothing for `stallMs`, or that breaks, aborts its transfer: the sandbox's reader killed, an upload's writer
 * killed and what it left removed (a file lands only once its whole body arrived).
 */
export class DirectTransfers {
  private readonly logger = new Logger('DirectTransfers');
  private readonly offers = new Map<string, Offer>();
  private readonly active = new Set<() => void>();
  private server: Server | null = null;
  private base = '';

  constructor(private readonly options: DirectTransfersOptions) {}

  /** Nest's start hook: the port opens with the application. */
  onApplicationBootstrap(): Promise<void> {
    return this.listen();
  }

  async listen(): Promise<void> {
    const server = createServer((request, response) => void this.handle(request, response));
    server.requestTimeout = 0; // a 100 MiB body may take minutes; stalls are bounded per socket instead
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.host, () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    const host = this.options.advertisedHost.includes(':') ? `[${this.options.advertisedHost}]` : this.options.advertisedHost;
    this.base = `http://${host}:${port}${PATH_PREFIX}`;
    this.server = server;
    this.logger.log(`file transfers straight from the gateway on ${this.options.host}:${port}`);
  }

  /** Offers a download: the gateway's GET answers the file's bytes; `done` runs once it ended either way. */
  offerDownload(download: FileDownload, done: () => void): { transferId: string; direct: DirectTransfer } {
    return this.offer('GET', done, {
      serve: (_request, response) => this.serveDownload(download, response),
      abort: async () => download.abort(),
    });
  }

  /** Offers an upload: the gateway's PUT carries the body; the answer is the FileWriteResult. */
  offerUpload(upload: FileUpload, done: () => void): { transferId: string; direct: DirectTransfer } {
    return this.offer('PUT', done, {
      serve: (request, response) => this.serveUpload(upload, request, response),
      abort: () => upload.abort(),
    });
  }

  /** Aborts every waiting and running transfer and stops listening (at shutdown). */
  async close(): Promise<void> {
    const waiting = [...this.offers.entries()];
    this.offers.clear();
    for (const cut of this.active) cut();
    await Promise.all(waiting.map(([, offer]) => (clearTimeout(offer.expiry), offer.abort())));
    const server = this.server;
    this.server = null;
    if (server !== null) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private offer(method: Offer['method'], done: () => void, how: Pick<Offer, 'serve' | 'abort'>): { transferId: string; direct: DirectTransfer } {
    if (this.server === null) throw new Error('the file transfer port is not listening');
    const transferId = randomUUID();
    const token = randomBytes(32);
    const expiry = setTimeout(() => {
      if (!this.offers.delete(transferId)) return;
      this.logger.warn(`file transfer ${transferId}: no connection within ${this.ttlMs()} ms, aborted`);
      void how.abort().catch((error: unknown) => this.logger.error(`file transfer ${transferId} abort failed: ${(error as Error).message}`)).finally(done);
    }, this.ttlMs()).unref();
    this.offers.set(transferId, {
      token,
      method,
      expiry,
      serve: (request, response) => how.serve(request, response).finally(done),
      abort: () => how.abort().finally(done),
    });
    return { transferId, direct: { url: `${this.base}${transferId}`, token: token.toString('base64url') } };
  }

  private ttlMs(): number {
    return this.options.tokenTtlMs ?? FILE_DIRECT_TOKEN_TTL_MS;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = request.url ?? '';
    const id = url.startsWith(PATH_PREFIX) ? url.slice(PATH_PREFIX.length) : '';
    const offer = this.offers.get(id);
    if (offer === undefined || offer.method !== request.method) return refuse(response, 404, 'no such transfer');
    if (!tokenMatches(request.headers.authorization, offer.token)) return refuse(response, 401, 'wrong transfer token');
    // One use: the offer is gone before a byte moves.
    this.offers.delete(id);
    clearTimeout(offer.expiry);
    request.socket.setTimeout(this.options.stallMs, () => {
      this.logger.warn(`file transfer ${id} stalled for ${this.options.stallMs} ms: aborted`);
      request.socket.destroy();
    });
    const cut = () => request.socket.destroy();
    this.active.add(cut);
    try {
      await offer.serve(request, response);
    } catch (error) {
      this.logger.error(`file transfer ${id} failed: ${(error as Error).message}`);
    } finally {
      this.active.delete(cut);
    }
  }

  private async serveDownload(download: FileDownload, response: ServerResponse): Promise<void> {
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': download.size });
    // The gateway gone (its client left, or the stall cut it) stops the pipe at once.
    const gone = new AbortController();
    response.once('close', () => gone.abort());
    try {
      // Not ended here: only a reader that finished well ends the answer; a failed one cuts it short.
      await pipeline(download.stream, response, { end: false, signal: gone.signal });
      await download.finish();
      response.end();
    } catch {
      download.abort();
      response.destroy();
    }
  }

  private async serveUpload(upload: FileUpload, request: IncomingMessage, response: ServerResponse): Promise<void> {
    try {
      // Not destroyed when the writer refuses mid-way: the refusal is still to be answered on this connection.
      for await (const piece of request.iterator({ destroyOnReturn: false })) await upload.write(piece as Buffer);
      const written = await upload.end();
      answer(response, 200, written);
    } catch (failure) {
      await upload.abort();
      // The gateway left (its client did, or the stall cut it): nobody hears an answer. Otherwise the refusal, as
      // the NATS path says it.
      // (A request read to its end is destroyed too, so `readableAborted` tells the two apart.)
      if (request.readableAborted || response.destroyed) return;
      answer(response, 400, serviceErrorPayloadOf(failure, this.logger), true);
    }
  }
}

/** Bearer token compared in constant time (both sides are 32 bytes once the length matches). */
function tokenMatches(header: string | undefined, expected: Buffer): boolean {
  if (header === undefined || !header.startsWith('Bearer ')) return false;
  const given = Buffer.from(header.slice('Bearer '.length), 'base64url');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function answer(response: ServerResponse, status: number, body: unknown, refusal = false): void {
  const text = JSON.stringify(body);
  // A refusal mid-upload closes the connection rather than read the rest of up to 100 MiB.
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...(refusal ? { [FILE_DIRECT_ERROR_HEADER]: '1', connection: 'close' } : {}),
  });
  response.end(text);
}

function refuse(response: ServerResponse, status: number, message: string): void {
  response.writeHead(status, { 'content-type': 'text/plain', connection: 'close' });
  response.end(message);
}
