import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import {
  DomainError,
  FILE_DIRECT_ERROR_HEADER,
  isServiceErrorPayload,
  type DirectTransfer,
  type FileWriteResult,
} from '@interns/contracts';
import { RemoteServiceError } from '@interns/messaging';
import { bodyChunks } from './file-transfer.client';

/** The largest answer read whole (a FileWriteResult or a refusal): a few hundred bytes in practice. */
const ANSWER_LIMIT_BYTES = 64 * 1024;

/**
 * The gateway's end of a direct file transfer (the runs end is apps/runs/src/files/direct-transfers.ts): the body
 * streamed over plain HTTP to the runs replica that opened the transfer, authorized by the one-use token of its NATS
 * open reply. TCP's backpressure bounds memory both ways; a connection that moves nothing for `stallMs` is cut, and
 * cutting it (the client left) makes the runs side abort. Refusals come back as the ServiceErrorPayload the NATS
 * path would carry, so the client sees the same envelope and status.
 */
export class DirectTransferClient {
  constructor(private readonly stallMs: number) {}

  /** The file's bytes, once the runs side answered; destroyed early (the client left), the runs side kills its reader. */
  async download(direct: DirectTransfer): Promise<Readable> {
    const outgoing = this.open('GET', direct, {});
    outgoing.end();
    const answer = await answerOf(outgoing);
    if (answer.statusCode !== 200) throw await refusalOf(answer);
    return answer;
  }

  /**
   * Streams the body (null: an empty file) and answers what was written. More than `maxBytes`: 413, and the runs
   * side aborts (nothing of it remains). The client's body is read, never destroyed here: a refusal still reaches it.
   */
  async upload(direct: DirectTransfer, body: { stream: Readable; length: number | null } | null, maxBytes: number): Promise<FileWriteResult> {
    const length = body === null ? 0 : body.length;
    const outgoing = this.open('PUT', direct, {
      'content-type': 'application/octet-stream',
      ...(length === null ? {} : { 'content-length': String(length) }),
    });
    const answered = answerOf(outgoing);
    answered.catch(() => undefined);
    let failure: unknown = null;
    try {
      if (body !== null) await send(body.stream, outgoing, maxBytes);
      outgoing.end();
    } catch (error) {
      failure = error;
      outgoing.destroy();
    }
    // A size refusal is the gateway's own; otherwise what the runs side answered (a quota refusal mid-way included).
    if (failure instanceof DomainError) throw failure;
    let answer: IncomingMessage;
    try {
      answer = await answered;
    } catch {
      throw new DomainError('internal_error', 'the file transfer ended on the runs side; try again');
    }
    if (answer.statusCode !== 200) throw await refusalOf(answer);
    return JSON.parse((await textOf(answer)).toString('utf8')) as FileWriteResult;
  }

  private open(method: 'GET' | 'PUT', direct: DirectTransfer, headers: Record<string, string>): ClientRequest {
    // A connection of its own (no keep-alive pool): the stall timer and a destroy touch this transfer only.
    const outgoing = httpRequest(direct.url, { method, agent: false, headers: { authorization: `Bearer ${direct.token}`, ...headers } });
    // Failures are read from the answer (or its absence); a late one (the runs side closed after refusing) is no crash.
    outgoing.on('error', () => undefined);
    outgoing.setTimeout(this.stallMs, () => outgoing.destroy(new Error(`the file transfer moved nothing for ${this.stallMs} ms`)));
    return outgoing;
  }
}

/** The client's body into the runs request, with backpressure, counted against `maxBytes`. */
async function send(body: Readable, outgoing: ClientRequest, maxBytes: number): Promise<void> {
  let received = 0;
  for await (const piece of bodyChunks(body)) {
    received += piece.length;
    if (received > maxBytes) throw new DomainError('payload_too_large', `a file upload may carry at most ${maxBytes} bytes`);
    if (outgoing.destroyed) throw new Error('the runs side closed the transfer');
    if (!outgoing.write(piece)) await drained(outgoing);
  }
}

function drained(outgoing: ClientRequest): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: Error) => {
      outgoing.off('drain', onDrain);
      outgoing.off('close', onClose);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onDrain = () => done();
    const onClose = () => done(new Error('the runs side closed the transfer'));
    outgoing.once('drain', onDrain);
    outgoing.once('close', onClose);
  });
}

function answerOf(outgoing: ClientRequest): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    outgoing.once('response', resolve);
    outgoing.once('error', reject);
    outgoing.once('close', () => reject(new Error('the file transfer closed without an answer')));
  });
}

/** A refusal as the runs side said it; anything else (a refused token, a broken answer) is the platform's fault. */
async function refusalOf(answer: IncomingMessage): Promise<Error> {
  const text = await textOf(answer).catch(() => Buffer.alloc(0));
  if (answer.headers[FILE_DIRECT_ERROR_HEADER] === '1') {
    try {
      const payload: unknown = JSON.parse(text.toString('utf8'));
      if (isServiceErrorPayload(payload)) return new RemoteServiceError(payload);
    } catch {
      // Not JSON: reported below as the broken answer it is.
    }
  }
  return new DomainError('internal_error', `the file transfer was refused on the runs side (${answer.statusCode}); try again`);
}

async function textOf(answer: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const piece of answer) {
    size += (piece as Buffer).length;
    if (size > ANSWER_LIMIT_BYTES) throw new Error('the answer is too long');
    parts.push(piece as Buffer);
  }
  return Buffer.concat(parts);
}
