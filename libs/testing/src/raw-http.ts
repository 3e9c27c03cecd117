import { connect } from 'node:net';

/**
 * A raw-socket HTTP/1.1 client for tests that need byte-exact requests node:http refuses to send: malformed
 * request lines, raw non-ASCII bytes in the target or a header, oversized headers (also with a large body),
 * unknown methods, broken framing. It writes the bytes given, reads one answer (interim 1xx answers skipped)
 * and tells an answer apart from a reset, a close without an answer and a timeout.
 */

/** One header as sent or received: name and value. */
export type RawHeader = [name: string, value: string];

export interface RawRequestParts {
  method: string;
  /** The request target as written in the request line (characters up to U+00FF are written as one byte each). */
  target: string;
  /** Written in order, as given (latin1, like the target): repeats and odd bytes are the caller's choice. */
  headers: RawHeader[];
  /** A string is sent as UTF-8. */
  body?: string | Buffer | null;
  /** Default `HTTP/1.1`. */
  version?: string;
  /** Adds `Content-Length` for a body when neither it nor `Transfer-Encoding` is among the headers (default true). */
  contentLength?: boolean;
}

/** The bytes of a request: request line, headers, blank line, body. */
export function rawRequestBytes(parts: RawRequestParts): Buffer {
  const body = parts.body === undefined || parts.body === null ? null : Buffer.isBuffer(parts.body) ? parts.body : Buffer.from(parts.body, 'utf8');
  const headers = [...parts.headers];
  const framed = headers.some(([name]) => /^(content-length|transfer-encoding)$/i.test(name));
  if (body !== null && parts.contentLength !== false && !framed) headers.push(['Content-Length', String(body.length)]);
  const head = `${parts.method} ${parts.target} ${parts.version ?? 'HTTP/1.1'}\r\n${headers.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`;
  return body === null ? Buffer.from(head, 'latin1') : Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

export interface RawHttpAnswer {
  kind: 'answer';
  status: number;
  statusLine: string;
  /** Header names lower-cased; a repeated header's values joined with `, `. */
  headers: Record<string, string>;
  body: Buffer;
  /** False when the body was left early: the window of an event stream passed, or the connection ended mid-body. */
  complete: boolean;
  /** The connection failed (reset, broken pipe) after the answer's head had arrived, e.g. while the rest of a large body was still being written. */
  failedAfterHead: string | null;
}

export interface RawHttpFailure {
  /** `reset`: the connection failed before an answer's head; `closed`: it ended without one; `timeout`: none in time. */
  kind: 'reset' | 'closed' | 'timeout';
  detail: string;
  /** Whatever had arrived (a partial answer, if any). */
  received: Buffer;
}

export type RawHttpOutcome = RawHttpAnswer | RawHttpFailure;

export interface RawHttpOptions {
  port: number;
  host?: string;
  /** For the whole answer (default 5000 ms). */
  timeoutMs?: number;
  /** Once the head of an event stream (`text/event-stream`) arrived, read it at most this long: a stream need not end by itself. */
  streamWindowMs?: number;
  /** The answer has no body whatever its headers say (the answer to HEAD). */
  noBody?: boolean;
}

interface Head {
  status: number;
  statusLine: string;
  headers: Record<string, string>;
}

const HEAD_END = Buffer.from('\r\n\r\n');

/** Parses a head (status line and headers, without the blank line). */
function parseHead(text: string): Head | null {
  const [statusLine, ...lines] = text.split('\r\n');
  const match = /^HTTP\/\d(?:\.\d)? (\d{3})(?: .*)?$/.exec(statusLine);
  if (match === null) return null;
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  return { status: Number(match[1]), statusLine, headers };
}

/** How far a chunked body is decoded: the data so far, and whether the last chunk arrived. */
function decodeChunked(raw: Buffer): { data: Buffer; done: boolean } {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', offset);
    if (lineEnd === -1) return { data: Buffer.concat(parts), done: false };
    const size = Number.parseInt(raw.subarray(offset, lineEnd).toString('latin1').split(';')[0].trim(), 16);
    if (Number.isNaN(size)) return { data: Buffer.concat(parts), done: true };
    if (size === 0) return { data: Buffer.concat(parts), done: true };
    const start = lineEnd + 2;
    if (raw.length < start + size) {
      parts.push(raw.subarray(start));
      return { data: Buffer.concat(parts), done: false };
    }
    parts.push(raw.subarray(start, start + size));
    offset = start + size + 2;
  }
}

/** The body received so far for `head`, and whether it is whole. */
function bodyOf(head: Head, raw: Buffer, ended: boolean, noBody: boolean): { body: Buffer; complete: boolean } {
  if (noBody || head.status === 204 || head.status === 304) return { body: Buffer.alloc(0), complete: true };
  if (/\bchunked\b/i.test(head.headers['transfer-encoding'] ?? '')) {
    const { data, done } = decodeChunked(raw);
    return { body: data, complete: done };
  }
  const declared = head.headers['content-length'];
  if (declared !== undefined && /^\d+$/.test(declared)) {
    const length = Number(declared);
    return { body: raw.subarray(0, length), complete: raw.length >= length };
  }
  return { body: raw, complete: ended };
}

/**
 * Sends `request` (bytes from `rawRequestBytes`, or any) on a new connection and resolves with the first final
 * answer, or with how the exchange failed. It never rejects. The whole request is written even when the server
 * answers early; the connection is closed once the answer is read.
 */
export function sendRaw(request: Buffer | string, options: RawHttpOptions): Promise<RawHttpOutcome> {
  const bytes = typeof request === 'string' ? Buffer.from(request, 'latin1') : request;
  return new Promise((resolve) => {
    const socket = connect(options.port, options.host ?? '127.0.0.1');
    let received = Buffer.alloc(0);
    let head: Head | null = null;
    let bodyStart = 0;
    let failure: string | null = null;
    let settled = false;
    let windowTimer: NodeJS.Timeout | undefined;

    const finish = (outcome: RawHttpOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(windowTimer);
      socket.destroy();
      resolve(outcome);
    };
    const answer = (ended: boolean, cutShort: boolean) => {
      if (head === null) return;
      const { body, complete } = bodyOf(head, received.subarray(bodyStart), ended, options.noBody === true);
      if (!complete && !ended && !cutShort) return;
      finish({ kind: 'answer', ...head, body, complete: complete && !cutShort, failedAfterHead: failure });
    };
    /** Finds the next final head in what arrived (1xx answers are interim and skipped). */
    const readHead = () => {
      while (head === null) {
        const end = received.indexOf(HEAD_END, bodyStart);
        if (end === -1) return;
        const parsed = parseHead(received.subarray(bodyStart, end).toString('latin1'));
        bodyStart = end + HEAD_END.length;
        if (parsed === null) {
          finish({ kind: 'closed', detail: 'the answer does not start with an HTTP status line', received });
          return;
        }
        if (parsed.status >= 200 || parsed.status === 101) head = parsed;
      }
      const stream = /^text\/event-stream/i.test(head.headers['content-type'] ?? '');
      if (stream && options.streamWindowMs !== undefined) windowTimer = setTimeout(() => answer(false, true), options.streamWindowMs);
    };

    const timeoutMs = options.timeoutMs ?? 5000;
    const timer = setTimeout(() => {
      const detail = head === null ? `no answer within ${timeoutMs} ms` : `the body did not end within ${timeoutMs} ms`;
      finish({ kind: 'timeout', detail, received });
    }, timeoutMs);

    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (head === null) readHead();
      answer(false, false);
    });
    socket.on('end', () => {
      answer(true, false);
      finish({ kind: 'closed', detail: 'the connection ended without an answer', received });
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      failure = error.code ?? error.message;
      if (head !== null) answer(true, false);
      finish({ kind: 'reset', detail: `${failure} before an answer`, received });
    });
    socket.on('close', () => {
      answer(true, false);
      finish({ kind: 'closed', detail: 'the connection closed without an answer', received });
    });
    socket.write(bytes);
  });
}
