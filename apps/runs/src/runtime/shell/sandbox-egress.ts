import { createHash } from 'node:crypto';
import { chmod, chown, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import type { CloseEgressListenerRequest, OpenEgressListenerReply, OpenEgressListenerRequest, RenewEgressListenerRequest, Subjects } from '@interns/contracts';
import { RpcClient } from '@interns/messaging';

/** The egress service answers from one lifecycle read and a listen(); this bounds a command's wait for it. */
const OPEN_TIMEOUT_MS = 10_000;
const CLOSE_TIMEOUT_MS = 5_000;
/** Where the host keeps its roots (Debian's ca-certificates). */
const HOST_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

/** Written by the egress process serving EGRESS_SOCKET_DIR: its instance id (apps/egress, EGRESS_INSTANCE_FILE). */
const EGRESS_INSTANCE_FILE = 'egress.instance';

/** One command's way out: its listener's socket (handed to the intern's uid), the CA bundle, the secrets' placeholders. */
export interface EgressGrant {
  /** The egress process that serves the listener. */
  instance: string;
  socketPath: string;
  caBundlePath: string;
  secretEnv: Record<string, string>;
}

/** Opens and closes a command's listener of the egress proxy. */
export interface SandboxEgressSource {
  open(internId: string, runId: string | null, uid: number): Promise<EgressGrant>;
  close(grant: EgressGrant): Promise<void>;
  /** Keeps a long-lived command's listener (it expires after the longest a shell command may run); false: it is gone. */
  renew(grant: EgressGrant): Promise<boolean>;
}

/**
 * The egress proxy's listeners over NATS (interface section 19). The socket the egress service made is given to the
 * intern's uid (this service runs as root; egress may not), and the sandbox's CA bundle (the host's roots and the
 * egress CA) is written once per CA under `trustDir`, a directory of this service's.
 */
export class NatsSandboxEgress implements SandboxEgressSource {
  private readonly logger = new Logger('SandboxEgress');
  private readonly rpc: RpcClient;
  private readonly bundles = new Map<string, Promise<string>>();

  constructor(
    nc: NatsConnection,
    private readonly subjects: Subjects['egress'],
    /** EGRESS_SOCKET_DIR, shared with the egress process beside this one. */
    private readonly socketDir: string,
    private readonly trustDir: string,
  ) {
    this.rpc = new RpcClient(nc);
  }

  async open(internId: string, runId: string | null, uid: number): Promise<EgressGrant> {
    const request: OpenEgressListenerRequest = { internId, runId };
    // Read for every command: an egress process that restarted has a new id.
    const instance = (await readFile(join(this.socketDir, EGRESS_INSTANCE_FILE), 'utf8').catch(() => '')).trim();
    if (!/^[0-9a-f-]{36}$/.test(instance)) throw new Error(`no egress process serves ${this.socketDir} (${EGRESS_INSTANCE_FILE} is missing or unreadable)`);
    const reply = await this.rpc.request<OpenEgressListenerReply>(this.subjects.openListener(instance), request, { timeoutMs: OPEN_TIMEOUT_MS });
    const grant = { instance, socketPath: reply.socketPath, caBundlePath: '', secretEnv: reply.secretEnv };
    try {
      await chown(reply.socketPath, uid, uid);
      grant.caBundlePath = await this.bundleFor(reply.caCertificate);
    } catch (error) {
      await this.close(grant);
      throw error;
    }
    return grant;
  }

  async renew(grant: EgressGrant): Promise<boolean> {
    const request: RenewEgressListenerRequest = { socketPath: grant.socketPath };
    try {
      return (await this.rpc.request<{ renewed: boolean }>(this.subjects.renewListener(grant.instance), request, { timeoutMs: CLOSE_TIMEOUT_MS })).renewed;
    } catch (error) {
      // Tried again at the next renewal, well before the listener would expire.
      this.logger.warn(`the egress listener ${grant.socketPath} was not renewed: ${(error as Error).message}`);
      return true;
    }
  }

  async close(grant: EgressGrant): Promise<void> {
    const request: CloseEgressListenerRequest = { socketPath: grant.socketPath };
    try {
      await this.rpc.request(this.subjects.closeListener(grant.instance), request, { timeoutMs: CLOSE_TIMEOUT_MS });
    } catch (error) {
      // The listener closes itself after the longest a command may run; nothing of the command waits for it.
      this.logger.warn(`the egress listener ${grant.socketPath} was not closed: ${(error as Error).message}`);
    }
  }

  /** The bundle trusting the host's roots and `caCertificate`, written (atomically, 0644) the first time it is asked for. */
  private bundleFor(caCertificate: string): Promise<string> {
    const key = createHash('sha256').update(caCertificate).digest('hex').slice(0, 16);
    let bundle = this.bundles.get(key);
    if (bundle === undefined) {
      bundle = this.writeBundle(key, caCertificate);
      this.bundles.set(key, bundle);
      bundle.catch(() => this.bundles.delete(key));
    }
    return bundle;
  }

  private async writeBundle(key: string, caCertificate: string): Promise<string> {
    await mkdir(this.trustDir, { recursive: true, mode: 0o700 });
    const roots = await readFile(HOST_CA_BUNDLE, 'utf8').catch(() => '');
    const path = join(this.trustDir, `ca-certificates-${key}.crt`);
    const partial = `${path}.${process.pid}.partial`;
    await writeFile(partial, `${roots.trimEnd()}\n${caCertificate.trim()}\n`, { mode: 0o644 });
    await chmod(partial, 0o644);
    await rename(partial, path);
    return path;
  }
}
