import { randomUUID } from 'node:crypto';
import { maxHeaderSize, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { errorEnvelope } from '@interns/contracts';
import type { ErrorReason } from '@interns/contracts';
import { CORRELATION_ID_HEADER } from './gateway-request';

/** How long, and for how many bytes, an answered connection is read and discarded before it is closed. */
export const LINGER_MS = 5_000;
export const LINGER_BYTES = 4 * 1024 * 1024;

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

function responseBytes(answer: ClientErrorAnswer): string {
  const envelope = errorEnvelope(answer.reason, answer.message);
  const body = JSON.stringify(envelope);
  const status = envelope.error.code;
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `${CORRELATION_ID_HEADER}: ${randomUUID()}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

/**
 * Reads and discards what the client still sends (a body behind oversized headers), then closes. Closing a
 * socket with unread bytes makes the kernel send a reset, which discards the answer before the client reads it.
 */
function lingerThenClose(socket: Socket): void {
  let discarded = 0;
  const close = () => socket.destroy();
  const timer = setTimeout(close, LINGER_MS);
  socket.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > LINGER_BYTES) close();
  });
  socket.once('close', () => clearTimeout(timer));
  socket.once('end', close);
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
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    socket.end(responseBytes(answerFor(error)));
    lingerThenClose(socket);
  };
}
