/**
 * The door's terminal (interface section 20): a WebSocket at `<origin>/api/terminal` carrying the shell's bytes
 * both ways as binary frames, and the window size as `{"type":"resize","cols","rows"}` text frames. A
 * `*.localhost` origin is reached on loopback with its own `Host` (RFC 6761, as curl and browsers resolve it; the
 * system resolver may not know such names).
 */
import { lookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { WebSocket } from 'ws';
import { apiErrorOf } from '../http/api-client';
import { CliError, EXIT } from '../errors';

export interface TerminalSize {
  cols: number;
  rows: number;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

export function isLoopbackName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/** dns.lookup, except that `localhost` and `*.localhost` are 127.0.0.1. */
export function localhostAwareLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  if (!isLoopbackName(hostname)) return void lookup(hostname, options, callback as never);
  if (options.all) callback(null, [{ address: '127.0.0.1', family: 4 }]);
  else callback(null, '127.0.0.1', 4);
}

/** The terminal's WebSocket URL at a door origin, with the first size. */
export function terminalUrl(origin: string, size: TerminalSize): URL {
  const url = new URL('/api/terminal', origin);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  url.searchParams.set('cols', String(size.cols));
  url.searchParams.set('rows', String(size.rows));
  return url;
}

/** Opens the terminal; a refused upgrade rejects with the API's envelope (ApiError), as any other refusal. */
export function openTerminal(origin: string, token: string, size: TerminalSize, timeoutMs = 15_000): Promise<WebSocket> {
  const socket = new WebSocket(terminalUrl(origin, size), {
    headers: { authorization: `Bearer ${token}` },
    lookup: localhostAwareLookup as never,
    handshakeTimeout: timeoutMs,
  });
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(socket));
    socket.once('unexpected-response', (_request, response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const body = Buffer.concat(chunks);
        const headers = new Headers();
        for (const [name, value] of Object.entries(response.headers)) if (typeof value === 'string') headers.set(name, value);
        void apiErrorOf(new Response(body, { status: response.statusCode ?? 500, headers })).then(reject);
      });
      socket.terminate();
    });
    socket.once('error', (error) => reject(new CliError(`cannot open the terminal at ${origin}: ${error.message}`, EXIT.unreachable, 'unreachable')));
  });
}
