import https from 'node:https';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';

/**
 * The egress benchmark's client: Node's https with a keep-alive agent, either straight to the origin on 127.0.0.1
 * (`DirectAgent`, the baseline) or through the proxy (`TunnelAgent`: each new connection is a CONNECT to the
 * proxy, then TLS over the tunnel). Everything else is the same code: one request path, the same agent options.
 * Node 20 has no proxy support of its own in https (NODE_USE_ENV_PROXY is Node 24), hence the agent.
 */

type ConnectionCallback = (error: Error | null, stream: Duplex) => void;

interface CountingAgent extends https.Agent {
  /** Connections this agent opened (TCP + TLS; through the proxy: CONNECT + TLS). */
  connectionsOpened: number;
}

const AGENT_OPTIONS: https.AgentOptions = { keepAlive: true, keepAliveMsecs: 1000, scheduling: 'lifo' };

/** Straight to the origin: the request's host name is kept (SNI, Host, certificate check), the address is 127.0.0.1. */
export class DirectAgent extends https.Agent implements CountingAgent {
  connectionsOpened = 0;

  constructor(maxSockets: number, ca: string) {
    super({ ...AGENT_OPTIONS, maxSockets, maxFreeSockets: maxSockets, ca });
  }

  override createConnection(options: https.RequestOptions, callback?: ConnectionCallback): Duplex | null | undefined {
    this.connectionsOpened += 1;
    return super.createConnection({ ...options, host: '127.0.0.1' }, callback);
  }
}

/** Through the proxy: `CONNECT host:port` on a new TCP connection to it, then TLS end to end over the tunnel. */
export class TunnelAgent extends https.Agent implements CountingAgent {
  connectionsOpened = 0;

  constructor(
    maxSockets: number,
    private readonly trust: string,
    private readonly proxyPort: number,
  ) {
    super({ ...AGENT_OPTIONS, maxSockets, maxFreeSockets: maxSockets });
  }

  override createConnection(options: https.RequestOptions, callback?: ConnectionCallback): Duplex | null | undefined {
    this.connectionsOpened += 1;
    const done = callback as ConnectionCallback;
    const host = options.host ?? 'localhost';
    const authority = `${host}:${options.port}`;
    const socket = net.connect(this.proxyPort, '127.0.0.1');
    socket.setNoDelay(true);
    let received = Buffer.alloc(0);
    const fail = (error: Error) => {
      socket.destroy();
      done(error, socket);
    };
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const headEnd = received.indexOf('\r\n\r\n');
      if (headEnd === -1) return;
      socket.off('data', onData);
      socket.off('error', fail);
      const statusLine = received.subarray(0, received.indexOf('\r\n')).toString();
      if (!/^HTTP\/1\.[01] 200 /.test(statusLine)) return fail(new Error(`CONNECT ${authority}: ${statusLine}`));
      // Nothing may follow the 200 before the client's TLS hello; the proxy never sends more.
      if (received.length > headEnd + 4) return fail(new Error(`CONNECT ${authority}: bytes after the 200`));
      const secure = tls.connect({
        socket,
        servername: options.servername ?? host,
        ca: this.trust,
        ALPNProtocols: ['http/1.1'],
      });
      secure.once('secureConnect', () => done(null, secure));
      secure.once('error', (error) => done(error, secure));
    };
    socket.on('data', onData);
    socket.once('error', fail);
    socket.once('connect', () => socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`));
    return undefined;
  }
}

export interface Target {
  name: string;
  agent: DirectAgent | TunnelAgent;
  /** The origin's name (SNI, Host) and port. */
  host: string;
  port: number;
  headers: Record<string, string>;
}

export interface Answer {
  ok: boolean;
  ms: number;
  /** Why it was not a 200 with the whole body. */
  error?: string;
}

const REQUEST_TIMEOUT_MS = 10_000;

function once(target: Target, expectedBytes: number): Promise<Answer & { reused: boolean }> {
  return new Promise((resolve) => {
    const startedAt = performance.now();
    let settled = false;
    const finish = (error?: string, reused = false) => {
      if (settled) return;
      settled = true;
      resolve({ ok: error === undefined, ms: performance.now() - startedAt, error, reused });
    };
    const request = https.request(
      { agent: target.agent, host: target.host, port: target.port, path: '/1k', method: 'GET', headers: target.headers },
      (response) => {
        let bytes = 0;
        response.on('data', (chunk: Buffer) => (bytes += chunk.length));
        response.on('end', () => {
          if (response.statusCode !== 200) finish(`HTTP ${response.statusCode}`);
          else if (bytes !== expectedBytes) finish(`${bytes} bytes`);
          else finish();
        });
        response.on('error', (error) => finish(error.message));
      },
    );
    request.setTimeout(REQUEST_TIMEOUT_MS, () => request.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    request.on('error', (error: NodeJS.ErrnoException) => finish(error.code ?? error.message, request.reusedSocket));
    request.end();
  });
}

/**
 * One `GET /1k`, timed from the request's start to the last body byte. A keep-alive connection the server closed
 * just as it was reused (ECONNRESET on a reused socket) is retried once on a new one, as Node's docs advise; the
 * time then counts from the retry.
 */
export async function get(target: Target, expectedBytes: number): Promise<Answer> {
  const first = await once(target, expectedBytes);
  if (first.ok || !first.reused || first.error !== 'ECONNRESET') return first;
  return once(target, expectedBytes);
}

export interface LoopResult {
  ok: number;
  failed: number;
  errors: Map<string, number>;
  seconds: number;
}

/** `clients` concurrent loops, each sending its next request as soon as its last one is answered, for `ms`. */
export async function closedLoop(target: Target, clients: number, ms: number, expectedBytes: number, aborted: () => boolean): Promise<LoopResult> {
  const result: LoopResult = { ok: 0, failed: 0, errors: new Map(), seconds: 0 };
  const startedAt = performance.now();
  const until = startedAt + ms;
  const client = async () => {
    while (performance.now() < until && !aborted()) {
      const answer = await get(target, expectedBytes);
      if (answer.ok) result.ok += 1;
      else {
        result.failed += 1;
        result.errors.set(answer.error ?? '?', (result.errors.get(answer.error ?? '?') ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  result.seconds = (performance.now() - startedAt) / 1000;
  return result;
}
