import { randomUUID } from 'node:crypto';
import { maxHeaderSize, STATUS_CODES, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { ErrorReason } from '@interns/contracts';
import { CORRELATION_ID_HEADER } from '../gateway-request';
import { apiError, type HttpError } from './http-errors';

/**
 * How long, and for how many bytes, an answered connection is read and discarded before it is closed (nginx's
 * lingering close has the same shape): at most LINGER_MS in all, LINGER_IDLE_MS without a byte, LINGER_BYTES.
 */
export const LINGER_MS = 30_000;
export const LINGER_IDLE_MS = 5_000;
export const LINGER_BYTES = 64 * 1024 * 1024;

/** A parse error of Node's HTTP parser (`clientError`); `rawPacket` is the Buffer the parser failed on. */
type ClientError = Error & { code?: string; rawPacket?: unknown };

interface ClientErrorAnswer {
  reason: ErrorReason;
  message: string;
}

/** A request line's start: a method token and a space. */
const REQUEST_LINE_START = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ /;

/**
 * Over the head's size limit (`maxHeaderSize`, 16 KiB unless Node is told otherwise): 414 when the request line
 * alone reaches it, else 431. Node's parser counts the request line into the head, so a URI over the limit
 * surfaces as a header overflow; the packet it failed on tells which part was too long.
 */
function overflowAnswer(rawPacket: unknown): ClientErrorAnswer {
  const text = Buffer.isBuffer(rawPacket) ? rawPacket.toString('latin1') : '';
  const lineEnd = text.indexOf('\r\n');
  const requestLineLength = lineEnd === -1 ? text.length : lineEnd;
  if (REQUEST_LINE_START.test(text) && (lineEnd === -1 || requestLineLength >= maxHeaderSize)) {
    return { reason: 'uri_too_long', message: `the request line is over the ${maxHeaderSize}-byte limit of a request head` };
  }
  return { reason: 'headers_too_large', message: `the request head is over its ${maxHeaderSize}-byte limit` };
}

function answerFor(error: ClientError): ClientErrorAnswer {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return overflowAnswer(error.rawPacket);
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { reason: 'timeout', message: 'the request did not arrive in time' };
    case 'HPE_INVALID_METHOD':
      return { reason: 'invalid_body', message: 'malformed request: unknown method' };
    default:
      return { reason: 'invalid_body', message: 'malformed request (request line, header or framing)' };
  }
}

/** A whole HTTP/1.1 answer as bytes for the socket, closing the connection. */
function responseBytes(error: HttpError, correlationId: string): string {
  const body = JSON.stringify(error.body);
  const headers = { ...error.headers, 'content-type': 'application/json; charset=utf-8', [CORRELATION_ID_HEADER]: correlationId };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return (
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}\r\n` +
    lines.join('') +
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    'connection: close\r\n\r\n' +
    body
  );
}

/**
 * Reads and discards what the client still sends (`incoming`: the socket, or the request whose body is left),
 * then closes: closing a socket with unread bytes makes the kernel send a reset, which discards the answer
 * before the client reads it. At most LINGER_BYTES, for at most LINGER_MS.
 */
function lingerThenClose(socket: Socket, incoming: Readable = socket): void {
  let discarded = 0;
  const close = () => socket.destroy();
  const timer = setTimeout(close, LINGER_MS);
  let idle = setTimeout(close, LINGER_IDLE_MS);
  incoming.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > LINGER_BYTES) close();
    clearTimeout(idle);
    idle = setTimeout(close, LINGER_IDLE_MS);
  });
  incoming.once('end', close);
  incoming.resume();
  socket.once('close', () => {
    clearTimeout(timer);
    clearTimeout(idle);
  });
  socket.once('end', close);
}

/**
 * Answers a request whose body is refused unread (413: over the size limit) straight on its socket, then
 * reads the rest of the body before closing. Through the ServerResponse, Node would close the socket as soon as
 * the answer is written, with the client still sending: a reset instead of the 413.
 */
export function answerBeforeBody(request: IncomingMessage, error: HttpError, correlationId: string): void {
  const socket = request.socket;
  if (socket.destroyed || !socket.writable) return;
  socket.write(responseBytes(error, correlationId));
  socket.end();
  lingerThenClose(socket, request);
}

/**
 * Fastify's `clientErrorHandler`: what the HTTP layer answers before any route, hook or Nest's error handler
 * runs (a malformed request line, a raw non-ASCII byte in the target, a head over 16 KiB, a request that did
 * not arrive in time) is the contract's envelope with an `X-Correlation-Id`, then the connection closes
 * gracefully. A parse error the parser raises again on later bytes of an answered socket is ignored.
 */
export function clientErrorHandler() {
  const answered = new WeakSet<Socket>();
  return (error: ClientError, socket: Socket): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed || answered.has(socket)) return;
    answered.add(socket);
    // A response already under way on this connection: another answer's bytes would corrupt it; only closing is left.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    if (!socket.writable || inFlight?.headersSent === true) {
      socket.destroy();
      return;
    }
    const answer = answerFor(error);
    socket.end(responseBytes(apiError(answer.reason, answer.message), randomUUID()));
    lingerThenClose(socket);
  };
}

/**
 * An `Expect` other than `100-continue`: Node would answer 417 itself, outside the envelope. RFC 9110 lets a
 * server ignore an expectation it does not support; the request is served as if it had none.
 */
export function serveUnknownExpectations(server: Server): void {
  server.on('checkExpectation', (request, response) => server.emit('request', request, response));
}
