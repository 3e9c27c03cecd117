/** Small pieces of HTTP the proxy speaks on both legs: hop-by-hop headers, sizes, its own plain-text answers. */
import http from 'node:http';
import { isIP } from 'node:net';
import type { EgressTarget } from './host-policy';

/** The first byte of a TLS handshake record: what tells TLS from plain HTTP inside a CONNECT tunnel. */
export const TLS_HANDSHAKE_RECORD = 0x16;
/** Connection-level headers (RFC 9110 section 7.6.1) and the proxy's own: they concern one hop, never the origin. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

export function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException)?.code ?? (error instanceof Error ? error.message : String(error));
}

/** The path of a request target without its query: a query string often carries credentials of its own. */
export function pathOf(requestTarget: string): string {
  const end = requestTarget.search(/[?#]/);
  return end === -1 ? requestTarget : requestTarget.slice(0, end);
}

export function headSize(startLine: string, rawHeaders: readonly string[]): number {
  let size = Buffer.byteLength(startLine) + 4;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) size += Buffer.byteLength(rawHeaders[i]) + Buffer.byteLength(rawHeaders[i + 1]) + 4;
  return size;
}

export function withoutHopByHop(rawHeaders: readonly string[]): string[] {
  // Headers named in Connection are hop-by-hop as well.
  const named = new Set(HOP_BY_HOP);
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i].toLowerCase() === 'connection') {
      for (const token of rawHeaders[i + 1].split(',')) named.add(token.trim().toLowerCase());
    }
  }
  const kept: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (!named.has(rawHeaders[i].toLowerCase())) kept.push(rawHeaders[i], rawHeaders[i + 1]);
  }
  return kept;
}

export function plainTextResponse(status: number, body: string): string {
  const text = `${body}\n`;
  return (
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`
  );
}

export function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function authority(target: EgressTarget): string {
  return isIP(target.host) === 6 ? `[${target.host}]:${target.port}` : `${target.host}:${target.port}`;
}
