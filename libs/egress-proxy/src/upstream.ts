/**
 * The proxy's leg towards origins (interface section 19): connections to a target's checked addresses only (never
 * a second DNS answer), TLS verifying the name the client asked for, sessions resumed per host, and the kept-alive
 * connection a terminated tunnel's requests share.
 */
import http from 'node:http';
import net, { isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import tls, { type TLSSocket } from 'node:tls';
import type { EgressTarget } from './host-policy';
import { errorCode } from './proxy-http';

/** Origin hosts whose TLS sessions are kept for resumption. */
const MAX_UPSTREAM_SESSIONS = 1000;

/** A target whose addresses were resolved and checked: connections go to these and nowhere else. */
export interface PinnedTarget extends EgressTarget {
  addresses: string[];
}

/** A failure to reach the origin, answered 502 (or 504 for a timeout). */
export class UpstreamError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** Whether the agent holds an idle connection for the target, to be reused by the next request. */
export function hasIdleConnection(agent: http.Agent, target: PinnedTarget): boolean {
  const name = agent.getName({ host: target.host, port: target.port });
  return (agent.freeSockets[name]?.length ?? 0) > 0;
}

/** One origin connection, reused: `handoff` is a connection just made (and verified) for the agent to take. */
export interface UpstreamPool {
  agent: http.Agent;
  handoff: Duplex | null;
}


/** Registers a socket with its listener, so closing the listener ends it. */
export type Track = (socket: Duplex) => void;

export interface UpstreamOptions {
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  /** CA certificates (PEM) trusted besides Node's roots (tests' origins). */
  extraCa?: readonly string[];
}

export class Upstream {
  /** The upstream leg's trust, built once: extra CAs (tests' origins) beside Node's roots, or Node's defaults. */
  private readonly context: tls.SecureContext | undefined;
  /** TLS sessions of origins, by host, so a next connection to one resumes instead of a full handshake. */
  private readonly sessions = new Map<string, Buffer>();
  private readonly connectTimeoutMs: number;
  private readonly idleTimeoutMs: number;

  constructor(options: UpstreamOptions) {
    // Parsing the roots per connection would cost milliseconds each: the context is made once.
    this.context = options.extraCa === undefined ? undefined : tls.createSecureContext({ ca: [...tls.rootCertificates, ...options.extraCa] });
    this.connectTimeoutMs = options.connectTimeoutMs;
    this.idleTimeoutMs = options.idleTimeoutMs;
  }

  /**
   * The kept-alive origin connection of a terminated tunnel: one at a time (its requests are sequential); the agent
   * takes the connection the proxy has just made and verified (`handoff`), or, when its idle one closed meanwhile,
   * makes one the same way (checked addresses, the origin's certificate verified).
   */
  pool(target: PinnedTarget, useTls: () => boolean, track: Track): UpstreamPool {
    const pool: UpstreamPool = { agent: new http.Agent({ keepAlive: true, maxSockets: 1, maxFreeSockets: 1 }), handoff: null };
    const createConnection = (_options: unknown, callback: (error: Error | null, socket?: Duplex) => void): Duplex | undefined => {
      const ready = pool.handoff;
      pool.handoff = null;
      if (ready !== null) return ready;
      this.connect(target, useTls(), track).then(
        (socket) => callback(null, socket),
        (error: unknown) => callback(error as Error),
      );
      return undefined;
    };
    (pool.agent as unknown as { createConnection: typeof createConnection }).createConnection = createConnection;
    return pool;
  }

  /** Connects to the first checked address that answers (TCP, then TLS verifying the origin when `useTls`). */
  async connect(target: PinnedTarget, useTls: boolean, track: Track): Promise<Socket> {
    let lastError: unknown = null;
    for (const address of target.addresses) {
      let socket: Socket;
      try {
        socket = await this.connectTcp(address, target, track);
      } catch (error) {
        if (error instanceof UpstreamError && error.status === 504) throw error;
        lastError = error;
        continue;
      }
      return useTls ? this.startTls(socket, target, track) : socket;
    }
    throw new UpstreamError(`egress_error: ${target.host}: connection failed (${errorCode(lastError)})`, 502);
  }

  private connectTcp(address: string, target: PinnedTarget, track: Track): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: address, port: target.port });
      track(socket);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new UpstreamError(`egress_error: ${target.host}: no connection within ${this.connectTimeoutMs / 1000}s`, 504));
      }, this.connectTimeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        socket.on('error', () => socket.destroy());
        socket.setTimeout(this.idleTimeoutMs, () => socket.destroy());
        resolve(socket);
      });
      socket.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
  }

  private startTls(socket: Socket, target: PinnedTarget, track: Track): Promise<TLSSocket> {
    return new Promise((resolve, reject) => {
      const tlsSocket = tls.connect({
        socket,
        // The identity checked is the name the client asked for, never the address connected to.
        host: target.host,
        servername: isIP(target.host) === 0 ? target.host : undefined,
        secureContext: this.context,
        session: this.sessions.get(target.host),
        ALPNProtocols: ['http/1.1'],
      });
      tlsSocket.on('session', (session: Buffer) => this.rememberSession(target.host, session));
      track(tlsSocket);
      const timer = setTimeout(() => {
        tlsSocket.destroy();
        reject(new UpstreamError(`egress_error: ${target.host}: no TLS handshake within ${this.connectTimeoutMs / 1000}s`, 504));
      }, this.connectTimeoutMs);
      tlsSocket.once('secureConnect', () => {
        clearTimeout(timer);
        tlsSocket.removeAllListeners('error');
        tlsSocket.on('error', () => tlsSocket.destroy());
        resolve(tlsSocket);
      });
      tlsSocket.once('error', (error) => {
        clearTimeout(timer);
        tlsSocket.destroy();
        reject(new UpstreamError(`egress_error: ${target.host}: TLS with the origin failed (${errorCode(error)})`, 502));
      });
    });
  }

  /** Keeps the newest session per origin host, at most MAX_UPSTREAM_SESSIONS hosts (the oldest go first). */
  private rememberSession(host: string, session: Buffer): void {
    this.sessions.delete(host);
    this.sessions.set(host, session);
    if (this.sessions.size > MAX_UPSTREAM_SESSIONS) {
      const oldest = this.sessions.keys().next().value;
      if (oldest !== undefined) this.sessions.delete(oldest);
    }
  }
}
