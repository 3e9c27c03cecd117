import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { Logger } from '@nestjs/common';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { DomainError, type PlatformConfig, type TerminalCloseReason } from '@interns/contracts';
import type { Terminal, TerminalClient } from '@interns/messaging';
import { clientAddressOfMessage } from '../http/client-address';
import { CORRELATION_ID_HEADER } from '../gateway-request';
import { apiError, toHttpError, type HttpError } from '../http/http-errors';
import { isDoorAccess, type DoorGate } from './door-gate';
import type { DoorHosts } from './door-host';

/** The terminal's route at the door (interface section 20). */
export const DOOR_TERMINAL_PATH = '/api/terminal';
/** The size a terminal starts with when the client names none. */
const DEFAULT_SIZE = { cols: 80, rows: 24 };
/** Keystrokes and resize frames are small; a larger frame is a client gone wrong (ws closes it with 1009). */
const MAX_FRAME_BYTES = 64 * 1024;
/** WebSocket close codes: 1000 a normal end (the shell exited, the client closed); 4000 the platform ended it (reason says why); 4400 a bad frame. */
const NORMAL_CLOSE = 1000;
const PLATFORM_CLOSE = 4000;
const BAD_FRAME_CLOSE = 4400;
const NORMAL_REASONS: ReadonlySet<TerminalCloseReason> = new Set(['exited', 'client_closed']);

/**
 * `GET /api/terminal` at an intern's door (interface section 20): a WebSocket on the intern's terminal. The upgrade
 * request never reaches Fastify: it is taken from the HTTP server's `upgrade` event, passes the door's checks
 * (DoorGate, the same as every door route), and opens the terminal on runs before the switch, so every refusal is an
 * HTTP answer in the envelope. Then frames are piped: binary both ways, a text frame resizes. Output is credited back
 * to runs as the socket writes it out (TerminalClient's flow control), so a client that does not read holds the shell
 * back instead of growing the gateway's memory. An upgrade at any other host or path is refused in the envelope too.
 */
export class DoorTerminals {
  private readonly logger = new Logger('DoorTerminals');
  private readonly sockets = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES });
  private readonly open = new Map<WebSocket, Terminal>();
  private client: TerminalClient | null = null;

  constructor(
    private readonly config: PlatformConfig,
    private readonly hosts: DoorHosts,
    private readonly gate: DoorGate,
    /** Made at the first terminal: the module is also built without a connection (to read its routes). */
    private readonly terminalClient: () => TerminalClient,
  ) {}

  private get terminals(): TerminalClient {
    this.client ??= this.terminalClient();
    return this.client;
  }

  /** Takes the server's WebSocket upgrades (the door's only WebSocket route). */
  attach(server: Server): void {
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      void this.upgrade(request, socket, head);
    });
  }

  /** Gateway shutdown: every terminal ends (its shell with it), each socket told why. */
  async closeAll(): Promise<void> {
    await Promise.all(
      [...this.open].map(async ([socket, terminal]) => {
        socket.close(PLATFORM_CLOSE, 'shutdown');
        await terminal.close();
      }),
    );
  }

  private async upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const correlationId = randomUUID();
    let terminal: Terminal;
    try {
      const opened = await this.openFor(request, correlationId);
      if (!('id' in opened)) return refuse(socket, opened, correlationId);
      terminal = opened;
    } catch (error) {
      return refuse(socket, toHttpError(error, this.config.lifecycleRouteDeadlineMs), correlationId);
    }
    if (socket.destroyed) {
      await terminal.close();
      return;
    }
    this.sockets.handleUpgrade(request, socket, head, (webSocket) => this.bridge(webSocket, terminal));
  }

  /** The door's checks, the route, the first size, then the terminal itself: a Terminal, or the refusal. */
  private async openFor(request: IncomingMessage, correlationId: string): Promise<Terminal | HttpError> {
    const hostname = this.hosts.hostnameOf(request.headers.host);
    if (hostname === null) return apiError('not_found', `WebSockets are served at an intern's door only (GET ${DOOR_TERMINAL_PATH})`);
    const access = await this.gate.admit({
      hostname,
      authorization: request.headers.authorization,
      clientAddress: clientAddressOfMessage(request, this.config.trustForwardedFor),
      deadline: { timeoutMs: this.config.lifecycleRouteDeadlineMs, correlationId },
    });
    if (!isDoorAccess(access)) return access;
    const url = new URL(request.url ?? '/', 'http://door');
    if (request.method !== 'GET' || url.pathname !== DOOR_TERMINAL_PATH) return apiError('not_found', 'the door serves no such route');
    const size = sizeOf(url.searchParams);
    return this.terminals.openTerminal({ internId: access.intern.id, memberId: access.token.memberId, ...size, correlationId });
  }

  private bridge(socket: WebSocket, terminal: Terminal): void {
    this.open.set(socket, terminal);
    terminal.onOutput((bytes) => {
      if (socket.readyState !== socket.OPEN) return;
      socket.send(bytes, { binary: true }, (error) => {
        if (error === undefined || error === null) terminal.flushed(bytes.length);
      });
    });
    terminal.onClose((reason) => {
      this.open.delete(socket);
      if (socket.readyState === socket.OPEN) socket.close(NORMAL_REASONS.has(reason) ? NORMAL_CLOSE : PLATFORM_CLOSE, reason);
    });
    socket.on('message', (data: RawData, isBinary: boolean) => {
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      if (isBinary) return terminal.write(bytes);
      try {
        const { cols, rows } = resizeFrameOf(bytes.toString('utf8'));
        terminal.resize(cols, rows);
      } catch (error) {
        const message = error instanceof DomainError ? error.message : 'a text frame must be {"type":"resize","cols":<int>,"rows":<int>}';
        // A close reason holds at most 123 bytes.
        socket.close(BAD_FRAME_CLOSE, `invalid_body: ${message}`.slice(0, 123));
      }
    });
    socket.on('close', () => {
      this.open.delete(socket);
      void terminal.close();
    });
    socket.on('error', (error) => {
      this.logger.debug(`terminal ${terminal.id}: ${error.message}`);
      socket.terminate();
    });
  }
}

/** `cols` and `rows` of the query (each 1..1000, checked by the terminal); absent: 80 x 24. */
function sizeOf(query: URLSearchParams): { cols: number; rows: number } {
  const read = (name: 'cols' | 'rows'): number => {
    const value = query.get(name);
    if (value === null) return DEFAULT_SIZE[name];
    if (!/^[0-9]{1,4}$/.test(value)) throw new DomainError('invalid_body', `${name} must be an integer 1-1000`);
    return Number(value);
  };
  return { cols: read('cols'), rows: read('rows') };
}

/** `{"type":"resize","cols":<int>,"rows":<int>}`, exactly. */
function resizeFrameOf(text: string): { cols: number; rows: number } {
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    throw new DomainError('invalid_body', 'a text frame must be JSON: {"type":"resize","cols":<int>,"rows":<int>}');
  }
  const { type, cols, rows, ...rest } = (frame ?? {}) as Record<string, unknown>;
  if (type !== 'resize' || !Number.isInteger(cols) || !Number.isInteger(rows) || Object.keys(rest).length > 0) {
    throw new DomainError('invalid_body', 'a text frame must be {"type":"resize","cols":<int>,"rows":<int>}');
  }
  return { cols: cols as number, rows: rows as number };
}

/** An HTTP answer in the envelope written on the raw socket (the upgrade is refused), then the socket closed. */
function refuse(socket: Duplex, error: HttpError, correlationId: string): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(error.body);
  const headers = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    [CORRELATION_ID_HEADER]: correlationId,
    connection: 'close',
    ...error.headers,
  };
  const head = [`HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}`, ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
}
