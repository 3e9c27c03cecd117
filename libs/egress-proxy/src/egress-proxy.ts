/**
 * The egress proxy (interface section 19): a sandbox's only way out. An HTTP proxy (`HTTP_PROXY`/`HTTPS_PROXY`)
 * serving CONNECT and absolute-form plain HTTP, one listener per run: the listener a connection arrives on is
 * its identity (intern and run), so nothing inside the sandbox is trusted to say who it is.
 *
 * For each request, in this order: the port must be in EGRESS_PORTS; the host must be on the intern's allow list
 * or be a host one of its secrets is bound to; the run must be within its byte budget; only then is the name
 * resolved (a refused name is never looked up: DNS queries would carry data out), and every address it resolves
 * to must pass the address policy, else the request is refused; the connection then goes to an address that
 * was checked, never to a second DNS answer (no rebinding).
 *
 * Hosts a secret of the intern is bound to are the only ones whose TLS is terminated (with a leaf from the
 * egress CA): there each request's header values get placeholders replaced by values, and the upstream leg
 * verifies the origin's real certificate. Every other host is tunnelled untouched.
 *
 * Around 700 lines on purpose: one request's path through the proxy (listener and limits, admission, CONNECT and
 * its tunnel or termination, the forwarded HTTP request) shares the listener's state, and reads top to bottom as a
 * request goes. What stands apart is elsewhere: its inputs and outputs (egress-types.ts), the origin leg
 * (upstream.ts), HTTP pieces (proxy-http.ts), policy (host-policy.ts, address-policy.ts), release
 * (secret-release.ts), certificates (egress-ca.ts).
 */
import { randomUUID } from 'node:crypto';
import { lstat, chmod, unlink } from 'node:fs/promises';
import http from 'node:http';
import net, { isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { egressAllows } from '@interns/contracts';
import type { EgressContext, EgressLogEntry, EgressPolicy, EgressProxyOptions } from './egress-types';
import { type EgressTarget, parseConnectTarget, parseHostHeader, normalizeHost } from './host-policy';
import { authority, errorCode, headSize, pathOf, plainTextResponse, TLS_HANDSHAKE_RECORD, withoutHopByHop, withTimeout } from './proxy-http';
import { scanPlaceholders, substitutePlaceholders } from './secret-release';
import { hasIdleConnection, type PinnedTarget, type Track, Upstream, UpstreamError, type UpstreamPool } from './upstream';

const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const DEFAULT_IDLE_TIMEOUT_MS = 120_000;
const DEFAULT_RESOLVE_TIMEOUT_MS = 5_000;
/** Longer than any run lasts between two commands (a model's turn, a question waiting for its answer). */
const DEFAULT_BUDGET_RETENTION_MS = 6 * 3_600_000;

/** A request's outcome when the proxy answers it itself. */
interface Refusal {
  status: number;
  decision: 'allowed' | 'denied';
  /** The plain-text body, and the log entry's reason. */
  reason: string;
  secrets?: string[];
}

/** A run's byte budget, shared by every listener of the run. */
class RunBudget {
  used = 0;
  listeners = 0;
  /** Set while no listener of the run is open: the budget is forgotten when it fires, kept if the run opens another. */
  expiry: NodeJS.Timeout | null = null;

  constructor(private readonly limit: number) {}

  get exhausted(): boolean {
    return this.used >= this.limit;
  }

  /** Counts `bytes`; false once the run has moved more than it may. */
  take(bytes: number): boolean {
    this.used += bytes;
    return this.used <= this.limit;
  }
}

interface Listener {
  key: string;
  server: net.Server;
  context: EgressContext;
  budgetKey: string;
  budget: RunBudget;
  /** Every socket of this listener, client and upstream alike: closing the listener ends them all. */
  sockets: Set<Duplex>;
  /** Serves requests inside tunnels to secret-bound hosts: over terminated TLS, or plain HTTP. */
  inner: http.Server;
  /** The file to remove on close (unix sockets). */
  socketPath: string | null;
}

/** The tunnel a socket fed to `inner` belongs to. */
interface TunnelState {
  listener: Listener;
  target: PinnedTarget;
  tls: boolean;
  /** Whether anything of this tunnel was logged: a tunnel that carried no request is logged on its own when it closes. */
  logged: boolean;
  /**
   * A terminated tunnel's requests share one kept-alive connection to the origin (to its checked addresses, its
   * certificate verified once), as the client's own connection is shared; absent for a one-off absolute-form request.
   */
  upstream?: UpstreamPool;
}

export class EgressProxy {
  private readonly listeners = new Map<string, Listener>();
  private readonly budgets = new Map<string, RunBudget>();
  private readonly openConnections = new Map<string, number>();
  /** Client connections accepted past the intern's limit: each request on them is refused. */
  private readonly overLimit = new WeakSet<Duplex>();
  private readonly tunnels = new WeakMap<Duplex, TunnelState>();
  private readonly upstream: Upstream;
  private readonly connectTimeoutMs: number;
  private readonly idleTimeoutMs: number;
  private readonly resolveTimeoutMs: number;

  constructor(private readonly options: EgressProxyOptions) {
    this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.upstream = new Upstream({ connectTimeoutMs: this.connectTimeoutMs, idleTimeoutMs: this.idleTimeoutMs, extraCa: options.upstreamCa });
    this.resolveTimeoutMs = options.resolveTimeoutMs ?? DEFAULT_RESOLVE_TIMEOUT_MS;
  }

  /**
   * Serves `context` on a unix socket at `socketPath` (what the service binds into a run's sandbox), mode 0600:
   * the caller gives it to the sandbox's user. A stale socket left there by a crashed process is replaced;
   * the directory should be one only the service can write.
   */
  async listen(socketPath: string, context: EgressContext): Promise<void> {
    if (this.listeners.has(socketPath)) throw new Error(`a listener is already serving ${socketPath}`);
    const existing = await lstat(socketPath).catch(() => null);
    if (existing !== null) {
      if (!existing.isSocket()) throw new Error(`${socketPath} exists and is not a socket`);
      await unlink(socketPath);
    }
    await this.start(socketPath, context, socketPath, (server) => server.listen(socketPath));
    await chmod(socketPath, 0o600);
  }

  /**
   * Serves `context` on TCP `host`:`port` (port 0: any free one) and answers the port. For tests and development:
   * clients such as curl 7.88 reach a proxy only over TCP; the service serves each run on a unix socket.
   */
  async listenTcp(port: number, context: EgressContext, host = '127.0.0.1'): Promise<{ key: string; port: number }> {
    const key = `tcp:${randomUUID()}`;
    const server = await this.start(key, context, null, (listening) => listening.listen(port, host));
    return { key, port: (server.address() as net.AddressInfo).port };
  }

  /** Stops serving a listener (a socket path, or listenTcp's key) and ends every connection it has open. */
  async close(key: string): Promise<void> {
    const listener = this.listeners.get(key);
    if (listener === undefined) return;
    this.listeners.delete(key);
    const closed = new Promise<void>((resolve) => listener.server.close(() => resolve()));
    for (const socket of listener.sockets) socket.destroy();
    await closed;
    this.release(listener.budgetKey, listener.budget);
    if (listener.socketPath !== null) await unlink(listener.socketPath).catch(() => undefined);
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.listeners.keys()].map((key) => this.close(key)));
  }

  /**
   * One listener less on a budget. A run's budget outlives its last listener by budgetRetentionMs: its commands each
   * have a listener of their own, one after the other, and all of them count against one budget.
   */
  private release(budgetKey: string, budget: RunBudget): void {
    budget.listeners -= 1;
    if (budget.listeners > 0) return;
    if (budgetKey.startsWith('listener:')) {
      this.budgets.delete(budgetKey);
      return;
    }
    budget.expiry = setTimeout(() => {
      if (this.budgets.get(budgetKey) === budget && budget.listeners === 0) this.budgets.delete(budgetKey);
    }, this.options.budgetRetentionMs ?? DEFAULT_BUDGET_RETENTION_MS);
    budget.expiry.unref();
  }

  /** Bytes a run has moved so far (0 once its budget was forgotten, budgetRetentionMs after its last listener closed). */
  bytesUsed(runId: string): number {
    return this.budgets.get(`run:${runId}`)?.used ?? 0;
  }

  private async start(key: string, context: EgressContext, socketPath: string | null, listen: (server: http.Server) => void): Promise<http.Server> {
    if (this.listeners.has(key)) throw new Error(`a listener is already serving ${key}`);
    // A run's listeners share one budget; a listener without a run has one of its own.
    const budgetKey = context.runId === null ? `listener:${key}` : `run:${context.runId}`;
    const budget = this.budgets.get(budgetKey) ?? new RunBudget(this.options.bytesPerRun);
    this.budgets.set(budgetKey, budget);
    budget.listeners += 1;
    if (budget.expiry !== null) {
      clearTimeout(budget.expiry);
      budget.expiry = null;
    }

    const server = http.createServer({ requestTimeout: 0, headersTimeout: this.connectTimeoutMs + this.idleTimeoutMs });
    // A terminated tunnel stays open as long as the proxy's idle timeout allows, not Node's 5 s keep-alive default.
    const inner = http.createServer({ requestTimeout: 0, keepAliveTimeout: this.idleTimeoutMs });
    const listener: Listener = { key, server, context, budgetKey, budget, sockets: new Set(), inner, socketPath };
    server.timeout = this.idleTimeoutMs;
    inner.timeout = this.idleTimeoutMs;
    server.on('connection', (socket: Socket) => this.accept(listener, socket));
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      this.handleProxyRequest(listener, req, res).catch((error) => this.failResponse(res, error));
    });
    server.on('connect', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
      this.handleConnect(listener, req, socket as Socket, head).catch((error) => {
        if (socket.writable) socket.end(plainTextResponse(502, `egress_error: ${errorCode(error)}`));
        else socket.destroy();
      });
    });
    server.on('clientError', (_error, socket: Duplex) => {
      if (socket.writable) socket.end(plainTextResponse(400, 'egress proxy: malformed request'));
      else socket.destroy();
    });
    inner.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      const state = this.tunnels.get(req.socket);
      if (state === undefined) return void res.destroy();
      this.handleTunnelledRequest(state, req, res).catch((error) => this.failResponse(res, error));
    });
    inner.on('clientError', (_error, socket: Duplex) => socket.destroy());

    this.listeners.set(key, listener);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.once('listening', () => {
          server.off('error', reject);
          resolve();
        });
        listen(server);
      });
    } catch (error) {
      this.listeners.delete(key);
      this.release(budgetKey, budget);
      throw error;
    }
    return server;
  }

  /** Counts a client connection against its intern's limit; one past the limit is marked, and its requests refused. */
  private accept(listener: Listener, socket: Socket): void {
    const internId = listener.context.internId;
    const open = this.openConnections.get(internId) ?? 0;
    this.track(listener, socket);
    if (open >= this.options.connectionsPerIntern) {
      this.overLimit.add(socket);
      return;
    }
    this.openConnections.set(internId, open + 1);
    socket.once('close', () => {
      const now = (this.openConnections.get(internId) ?? 1) - 1;
      if (now === 0) this.openConnections.delete(internId);
      else this.openConnections.set(internId, now);
    });
  }

  private track(listener: Listener, socket: Duplex): void {
    listener.sockets.add(socket);
    socket.once('close', () => listener.sockets.delete(socket));
  }

  /** `track` bound to a listener, for the upstream leg's connections. */
  private tracker(listener: Listener): Track {
    return (socket) => this.track(listener, socket);
  }

  private log(listener: Listener, entry: EgressLogEntry): void {
    try {
      this.options.onLog(entry, listener.context);
    } catch {
      // A failing log sink must not take the proxy down; the service's sink reports its own failures.
    }
  }

  /**
   * Whether `target` may be reached at all, and where: policy, port and budget first, then resolution and the
   * address policy. A refused name is never resolved.
   */
  private async admit(listener: Listener, target: EgressTarget, policy: EgressPolicy): Promise<PinnedTarget | Refusal> {
    const refusal = this.policyRefusal(listener, target, policy);
    if (refusal !== null) return refusal;
    let addresses: string[];
    try {
      addresses = await withTimeout(
        this.options.resolver(target.host),
        this.resolveTimeoutMs,
        () => new UpstreamError(`egress_error: ${target.host} did not resolve within ${this.resolveTimeoutMs / 1000}s`, 504),
      );
    } catch (error) {
      if (error instanceof UpstreamError) return { status: error.status, decision: 'allowed', reason: error.message };
      return { status: 502, decision: 'allowed', reason: `egress_error: ${target.host} does not resolve (${errorCode(error)})` };
    }
    addresses = addresses.filter((address) => isIP(address) !== 0);
    if (addresses.length === 0) return { status: 502, decision: 'allowed', reason: `egress_error: ${target.host} resolves to no address` };
    // Every address must pass, not just one: a name answering with a public and a private address is refused
    // whole, so the outcome never depends on the order of the answers.
    for (const address of addresses) {
      const why = this.options.addressPolicy.refusal(address, target.port);
      if (why !== null) return { status: 403, decision: 'denied', reason: `egress_denied: ${target.host} resolves to ${why}` };
    }
    return { ...target, addresses };
  }

  /** The refusals that need no resolution: port, policy, byte budget. */
  private policyRefusal(listener: Listener, target: EgressTarget, policy: EgressPolicy): Refusal | null {
    if (!this.options.ports.includes(target.port)) {
      return { status: 403, decision: 'denied', reason: `egress_denied: port ${target.port} is not open for egress (${target.host})` };
    }
    const bound = policy.secrets.some((secret) => secret.hosts.includes(target.host));
    if (!bound && !egressAllows(policy.allow, target.host)) {
      return { status: 403, decision: 'denied', reason: `egress_denied: ${target.host} is not in this intern's egress policy` };
    }
    if (listener.budget.exhausted) return { status: 403, decision: 'denied', reason: 'egress_denied: limit' };
    return null;
  }

  private isBound(policy: EgressPolicy, host: string): boolean {
    return policy.secrets.some((secret) => secret.hosts.includes(host) && secret.placeholder !== '');
  }

  private entry(target: EgressTarget, at: Date, fields: Partial<EgressLogEntry>): EgressLogEntry {
    return {
      at: at.toISOString(),
      host: target.host,
      port: target.port,
      method: null,
      path: null,
      decision: 'allowed',
      reason: null,
      secrets: [],
      status: null,
      bytes_out: 0,
      bytes_in: 0,
      ...fields,
    };
  }

  // ---- CONNECT ----

  private async handleConnect(listener: Listener, req: http.IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    const at = new Date();
    socket.setTimeout(this.idleTimeoutMs, () => socket.destroy());
    socket.on('error', () => socket.destroy());
    const target = parseConnectTarget(req.url ?? '');
    if (target === null) {
      socket.end(plainTextResponse(400, `egress proxy: CONNECT needs host:port, got ${JSON.stringify((req.url ?? '').slice(0, 300))}`));
      return;
    }
    const refuse = (refusal: Refusal) => {
      socket.end(plainTextResponse(refusal.status, refusal.reason));
      this.log(listener, this.entry(target, at, { decision: refusal.decision, reason: refusal.reason, secrets: refusal.secrets ?? [] }));
    };
    if (this.overLimit.has(socket)) return refuse({ status: 403, decision: 'denied', reason: 'egress_denied: limit' });
    const policy = await listener.context.policy();
    const admitted = await this.admit(listener, target, policy);
    if ('status' in admitted) return refuse(admitted);

    if (this.isBound(policy, target.host)) return this.terminate(listener, socket, head, admitted, at);

    let upstream: Socket;
    try {
      upstream = await this.upstream.connect(admitted, false, this.tracker(listener));
    } catch (error) {
      const failure = error instanceof UpstreamError ? error : new UpstreamError(`egress_error: ${target.host}: ${errorCode(error)}`, 502);
      return refuse({ status: failure.status, decision: 'allowed', reason: failure.message });
    }
    if (socket.destroyed) return void upstream.destroy();
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    this.relay(listener, socket, upstream, head, (counts, cutOff) => {
      this.log(
        listener,
        this.entry(target, at, {
          decision: cutOff ? 'denied' : 'allowed',
          reason: cutOff ? 'egress_denied: limit' : null,
          bytes_out: counts.out,
          bytes_in: counts.in,
        }),
      );
    });
  }

  /**
   * Pipes a tunnel both ways, counting bytes against the run's budget; past the budget both ends are cut.
   * `done` runs once, when both sides are closed.
   */
  private relay(listener: Listener, client: Socket, upstream: Socket, head: Buffer, done: (counts: { out: number; in: number }, cutOff: boolean) => void): void {
    const counts = { out: 0, in: 0 };
    let cutOff = false;
    let finished = false;
    const end = () => {
      client.destroy();
      upstream.destroy();
      if (!finished) {
        finished = true;
        done(counts, cutOff);
      }
    };
    const pump = (from: Duplex, to: Duplex, direction: 'out' | 'in') => {
      from.on('data', (chunk: Buffer) => {
        counts[direction] += chunk.length;
        if (!listener.budget.take(chunk.length)) {
          cutOff = true;
          return end();
        }
        if (!to.write(chunk)) from.pause();
      });
      to.on('drain', () => from.resume());
      from.on('end', () => to.end());
    };
    upstream.setTimeout(this.idleTimeoutMs, end);
    client.setTimeout(this.idleTimeoutMs, end);
    client.on('close', end);
    upstream.on('close', end);
    upstream.on('error', end);
    client.on('error', end);
    if (head.length > 0) {
      counts.out += head.length;
      if (!listener.budget.take(head.length)) {
        cutOff = true;
        return end();
      }
      upstream.write(head);
    }
    pump(client, upstream, 'out');
    pump(upstream, client, 'in');
  }

  /**
   * A tunnel to a host a secret is bound to: answered 200, then served by `inner` (TLS terminated with the egress
   * CA's leaf, or plain HTTP when the client speaks it, as undici does for http:// URLs over CONNECT :80).
   */
  private async terminate(listener: Listener, socket: Socket, head: Buffer, target: PinnedTarget, at: Date): Promise<void> {
    const context = await this.options.ca.secureContextFor(target.host);
    if (socket.destroyed) return;
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    let handshakeDone = false;
    const state: TunnelState = { listener, target, tls: true, logged: false };
    state.upstream = this.upstream.pool(target, () => state.tls, this.tracker(listener));
    socket.once('close', () => state.upstream?.agent.destroy());
    // A tunnel that carried no request (the client gave up, or did not trust the egress CA) still gets its entry.
    socket.once('close', () => {
      if (state.logged) return;
      const reason = state.tls && !handshakeDone ? 'egress_error: the client did not complete TLS with the egress CA leaf' : null;
      this.log(listener, this.entry(target, at, { reason }));
    });
    const firstBytes = head.length > 0 ? Promise.resolve(head) : new Promise<Buffer | null>((resolve) => {
      socket.once('data', (chunk: Buffer) => {
        socket.pause();
        resolve(chunk);
      });
      socket.once('close', () => resolve(null));
    });
    const first = await firstBytes;
    if (first === null) return;
    socket.unshift(first);
    if (first[0] !== TLS_HANDSHAKE_RECORD) {
      state.tls = false;
      this.tunnels.set(socket, state);
      listener.inner.emit('connection', socket);
      socket.resume();
      return;
    }
    const tlsSocket = new tls.TLSSocket(socket, {
      isServer: true,
      secureContext: context,
      ALPNProtocols: ['http/1.1'],
      // SNI pinned to the CONNECT target, checked in the ClientHello, before any request can arrive: a client
      // asking for another name must not reach this host's session. (No SNI: the default context, this host's.)
      SNICallback: (servername, callback) => {
        if (normalizeHost(servername) === target.host) return callback(null, context);
        const reason = `egress_denied: TLS server name ${servername} does not match the CONNECT target ${target.host}`;
        state.logged = true;
        this.log(listener, this.entry(target, at, { decision: 'denied', reason }));
        callback(new Error(reason));
      },
    });
    this.track(listener, tlsSocket);
    tlsSocket.once('secure', () => (handshakeDone = true));
    tlsSocket.on('error', () => tlsSocket.destroy());
    this.tunnels.set(tlsSocket, state);
    listener.inner.emit('connection', tlsSocket);
  }

  // ---- HTTP requests: absolute-form to the proxy, or inside a tunnel to a secret-bound host ----

  private async handleProxyRequest(listener: Listener, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const requestTarget = req.url ?? '';
    if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(requestTarget)) {
      return this.answer(res, 400, 'egress proxy: send an absolute URL (GET http://host/path) or CONNECT host:port; requests to the proxy itself are refused');
    }
    let url: URL;
    try {
      url = new URL(requestTarget);
    } catch {
      return this.answer(res, 400, 'egress proxy: the request URL is not a valid URL');
    }
    if (url.protocol !== 'http:') return this.answer(res, 400, `egress proxy: only http:// URLs are forwarded; use CONNECT for ${url.protocol}//`);
    const host = normalizeHost(url.hostname);
    if (host === null || url.username !== '' || url.password !== '') return this.answer(res, 400, 'egress proxy: the request URL has no valid host');
    const target: EgressTarget = { host, port: url.port === '' ? 80 : Number(url.port) };
    const at = new Date();
    const path = url.pathname + url.search;
    if (this.overLimit.has(req.socket)) {
      return this.refuseRequest(listener, req, res, target, at, { status: 403, decision: 'denied', reason: 'egress_denied: limit' });
    }
    const policy = await listener.context.policy();
    const admitted = await this.admit(listener, target, policy);
    if ('status' in admitted) return this.refuseRequest(listener, req, res, target, at, admitted);
    await this.forward({ listener, target: admitted, tls: false, logged: true }, policy, req, res, path, at);
  }

  private async handleTunnelledRequest(state: TunnelState, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const at = new Date();
    const requestTarget = req.url ?? '';
    const { listener, target } = state;
    state.logged = true;
    if (!requestTarget.startsWith('/')) {
      return this.refuseRequest(listener, req, res, target, at, {
        status: 400,
        decision: 'denied',
        reason: 'egress proxy: inside a tunnel send origin-form requests (GET /path)',
      });
    }
    const policy = await listener.context.policy();
    // The policy may have changed since CONNECT: the host must still be reachable, and the run within budget.
    const refusal = this.policyRefusal(listener, target, policy);
    if (refusal !== null) return this.refuseRequest(listener, req, res, target, at, refusal);
    await this.forward(state, policy, req, res, requestTarget, at);
  }

  /**
   * Sends one request to the pinned target and its response back: Host pinned to the target, placeholders
   * released in header values (TLS only) or the request refused, bytes counted against the budget.
   */
  private async forward(
    state: TunnelState,
    policy: EgressPolicy,
    req: http.IncomingMessage,
    res: http.ServerResponse,
    path: string,
    at: Date,
  ): Promise<void> {
    const { listener, target } = state;
    const defaultPort = state.tls ? 443 : 80;
    const hostHeader = req.headers.host;
    if (hostHeader !== undefined) {
      const named = parseHostHeader(hostHeader, target.port);
      if (named === null || named.host !== target.host || named.port !== target.port) {
        return this.refuseRequest(listener, req, res, target, at, {
          status: 403,
          decision: 'denied',
          reason: `egress_denied: Host ${hostHeader} does not match the target ${target.host}`,
        });
      }
    }
    const scan = scanPlaceholders(req.rawHeaders, policy.secrets, target.host);
    const carried = [...scan.releasable, ...scan.unreleasable].map((secret) => secret.name);
    if (scan.unreleasable.length > 0) {
      const name = scan.unreleasable[0].name;
      return this.refuseRequest(listener, req, res, target, at, {
        status: 403,
        decision: 'denied',
        reason: `egress_denied: secret ${name} is not released to ${target.host}`,
        secrets: carried,
      });
    }
    if (scan.releasable.length > 0 && !state.tls) {
      // A value sent over plain HTTP would cross the network in the clear.
      return this.refuseRequest(listener, req, res, target, at, {
        status: 403,
        decision: 'denied',
        reason: `egress_denied: secret ${scan.releasable[0].name} is released to ${target.host} over HTTPS only`,
        secrets: carried,
      });
    }
    const entry = this.entry(target, at, { method: req.method ?? null, path: pathOf(path), secrets: carried });
    const logOnce = (() => {
      let logged = false;
      return () => {
        if (logged) return;
        logged = true;
        entry.status = res.headersSent ? res.statusCode : entry.status;
        this.log(listener, entry);
      };
    })();
    res.once('close', logOnce);

    // The tunnel's idle origin connection when there is one (reached and verified before); else a new one.
    const pool = state.upstream ?? null;
    let upstreamSocket: Duplex | null = null;
    if (pool === null || !hasIdleConnection(pool.agent, target)) {
      try {
        upstreamSocket = await this.upstream.connect(target, state.tls, this.tracker(listener));
      } catch (error) {
        const failure = error instanceof UpstreamError ? error : new UpstreamError(`egress_error: ${target.host}: ${errorCode(error)}`, 502);
        entry.reason = failure.message;
        req.resume();
        return this.answer(res, failure.status, failure.message);
      }
      if (pool !== null) pool.handoff = upstreamSocket;
    }
    // Values are opened only now that the origin is reached (and, over TLS, verified): a request that goes
    // nowhere never has a value fetched.
    const values = new Map<string, string>();
    for (const secret of scan.releasable) {
      try {
        values.set(secret.placeholder, await listener.context.openSecret(secret.name));
      } catch {
        upstreamSocket?.destroy();
        if (pool !== null) pool.handoff = null;
        entry.reason = `egress_error: secret ${secret.name} could not be opened`;
        req.resume();
        return this.answer(res, 502, entry.reason);
      }
    }
    let rawHeaders = withoutHopByHop(req.rawHeaders);
    if (hostHeader === undefined) rawHeaders.unshift('Host', target.port === defaultPort ? authority(target).replace(/:\d+$/, '') : authority(target));
    rawHeaders = substitutePlaceholders(rawHeaders, values);
    let upstreamRequest: http.ClientRequest | null = null;
    const cut = () => {
      entry.decision = 'denied';
      entry.reason = 'egress_denied: limit';
      upstreamRequest?.destroy();
      upstreamSocket?.destroy();
      res.destroy();
    };
    const count = (direction: 'bytes_out' | 'bytes_in', bytes: number): boolean => {
      entry[direction] += bytes;
      if (listener.budget.take(bytes)) return true;
      cut();
      return false;
    };

    const method = req.method ?? 'GET';
    upstreamRequest = http.request({
      method,
      path,
      headers: rawHeaders,
      setHost: false,
      ...(pool !== null
        ? // The tunnel's agent: the connection made above (or its idle one), kept alive for the tunnel's next request.
          { agent: pool.agent, host: target.host, port: target.port }
        : // No agent: the request goes on this connection to the checked address, and the connection ends with it.
          { createConnection: () => upstreamSocket as Socket }),
    });
    const request = upstreamRequest;
    if (!count('bytes_out', headSize(`${method} ${path} HTTP/1.1`, rawHeaders))) return;
    request.on('error', (error) => {
      if (entry.reason === null) entry.reason = `egress_error: ${target.host}: ${errorCode(error)}`;
      if (!res.headersSent) this.answer(res, 502, entry.reason);
      else res.destroy();
    });
    req.on('data', (chunk: Buffer) => {
      if (count('bytes_out', chunk.length) && !request.write(chunk)) req.pause();
    });
    request.on('drain', () => req.resume());
    req.on('end', () => request.end());
    req.on('error', () => request.destroy());
    res.on('close', () => {
      if (!res.writableFinished) request.destroy();
    });

    request.on('response', (upstreamResponse: http.IncomingMessage) => {
      const responseHeaders = withoutHopByHop(upstreamResponse.rawHeaders);
      const statusCode = upstreamResponse.statusCode ?? 502;
      if (!count('bytes_in', headSize(`HTTP/1.1 ${statusCode} ${upstreamResponse.statusMessage ?? ''}`, responseHeaders))) return;
      entry.status = statusCode;
      res.writeHead(statusCode, upstreamResponse.statusMessage, responseHeaders);
      upstreamResponse.on('data', (chunk: Buffer) => {
        if (count('bytes_in', chunk.length) && !res.write(chunk)) upstreamResponse.pause();
      });
      res.on('drain', () => upstreamResponse.resume());
      upstreamResponse.on('end', () => res.end());
      upstreamResponse.on('error', () => res.destroy());
    });
  }

  private refuseRequest(listener: Listener, req: http.IncomingMessage, res: http.ServerResponse, target: EgressTarget, at: Date, refusal: Refusal): void {
    req.resume();
    this.answer(res, refusal.status, refusal.reason);
    this.log(
      listener,
      this.entry(target, at, {
        method: req.method ?? null,
        path: pathOf(req.url?.startsWith('/') ? req.url : this.pathOfAbsolute(req.url ?? '')),
        decision: refusal.decision,
        reason: refusal.reason,
        secrets: refusal.secrets ?? [],
        status: refusal.status,
      }),
    );
  }

  private pathOfAbsolute(requestTarget: string): string {
    try {
      return new URL(requestTarget).pathname;
    } catch {
      return requestTarget;
    }
  }

  /** A plain-text answer of the proxy's own; a connection past the intern's limit is closed after it. */
  private answer(res: http.ServerResponse, status: number, body: string): void {
    if (res.headersSent) return void res.destroy();
    const text = `${body}\n`;
    const headers: http.OutgoingHttpHeaders = { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text) };
    if (this.overLimit.has(res.req.socket)) headers.Connection = 'close';
    res.writeHead(status, headers);
    res.end(text);
  }

  private failResponse(res: http.ServerResponse, error: unknown): void {
    if (res.headersSent) return void res.destroy();
    this.answer(res, 502, `egress_error: ${errorCode(error)}`);
  }
}
