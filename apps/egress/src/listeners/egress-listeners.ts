import { randomUUID } from 'node:crypto';
import { chmod, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import {
  DomainError,
  type CloseEgressListenerRequest,
  type EgressContextReply,
  type OpenEgressListenerReply,
  type OpenEgressListenerRequest,
  type RenewEgressListenerRequest,
} from '@interns/contracts';
import type { EgressContext, EgressPolicy, EgressProxy } from '@interns/egress-proxy';
import type { VaultOpener } from '@interns/vault';
import type { EgressContextClient } from './egress-context.client';
import type { SecretPlaceholders } from './secret-placeholders';

const SOCKET_SUFFIX = '.sock';
/**
 * The file in EGRESS_SOCKET_DIR naming the egress process that serves it: a runs replica asks that one for its
 * listeners (its subjects end in the id), so a socket is always made where the replica can bind it.
 */
export const EGRESS_INSTANCE_FILE = 'egress.instance';

export interface EgressListenersOptions {
  proxy: EgressProxy;
  contexts: EgressContextClient;
  opener: VaultOpener;
  placeholders: SecretPlaceholders;
  /** EGRESS_SOCKET_DIR: the listeners' sockets, one per sandboxed command. */
  socketDir: string;
  /** This process's id, the last token of its listener subjects. */
  instanceId: string;
  caCertificate: string;
  /**
   * A listener runs no longer than this (the longest a shell command may run, and a margin): a runs replica that
   * died mid-command never closes its listeners, so they close themselves.
   */
  maxLifetimeMs: number;
}

/**
 * One proxy listener per sandboxed command (interface section 19): runs asks for one before the command starts and
 * binds its socket into the sandbox; the socket is the command's identity (intern and run). Each request asks
 * lifecycle for the intern's current policy and sealed secrets; a value is opened only to be released.
 */
export class EgressListeners {
  private readonly logger = new Logger('EgressListeners');
  private readonly expiries = new Map<string, NodeJS.Timeout>();

  constructor(private readonly options: EgressListenersOptions) {}

  /**
   * The socket directory, this process's own (one egress process per directory), searchable (not listable) by
   * others; stale sockets of a previous process go, and the directory names this process as its server.
   */
  async prepare(): Promise<void> {
    const { socketDir, instanceId } = this.options;
    await mkdir(socketDir, { recursive: true, mode: 0o711 });
    await chmod(socketDir, 0o711);
    for (const entry of await readdir(socketDir)) {
      if (entry.endsWith(SOCKET_SUFFIX)) await rm(join(socketDir, entry), { force: true });
    }
    const partial = join(socketDir, `${EGRESS_INSTANCE_FILE}.${process.pid}`);
    await writeFile(partial, instanceId, { mode: 0o644 });
    await rename(partial, join(socketDir, EGRESS_INSTANCE_FILE));
  }

  async open(request: OpenEgressListenerRequest): Promise<OpenEgressListenerReply> {
    const internId = request.internId.toLowerCase();
    const first = await this.options.contexts.fetch(internId);
    if (first.allow === null) throw new DomainError('not_found', 'intern not found');
    let latest: EgressContextReply = first;
    const { contexts, opener, placeholders } = this.options;
    const context: EgressContext = {
      internId,
      runId: request.runId,
      policy: async (): Promise<EgressPolicy> => {
        latest = await contexts.fetch(internId);
        return {
          allow: latest.allow ?? [],
          secrets: latest.secrets.map((secret) => ({ name: secret.name, hosts: secret.hosts, placeholder: placeholders.of(internId, secret.name) })),
        };
      },
      openSecret: async (name: string): Promise<string> => {
        const secret = latest.secrets.find((candidate) => candidate.name === name);
        if (secret === undefined) throw new Error(`secret ${name} is no longer usable`);
        return opener.open(secret.sealed, secret.name);
      },
    };
    const socketPath = join(this.options.socketDir, `${randomUUID()}${SOCKET_SUFFIX}`);
    await this.options.proxy.listen(socketPath, context);
    this.expireLater(socketPath, internId);
    return {
      socketPath,
      caCertificate: this.options.caCertificate,
      secretEnv: placeholders.environment(
        internId,
        first.secrets.map((secret) => secret.name),
      ),
    };
  }

  /** A terminal's listener lives as long as its runs replica keeps renewing it (a dead replica stops, so it expires). */
  renew(request: RenewEgressListenerRequest): { renewed: boolean } {
    const expiry = this.expiries.get(request.socketPath);
    if (expiry === undefined) return { renewed: false };
    expiry.refresh();
    return { renewed: true };
  }

  private expireLater(socketPath: string, internId: string): void {
    const expiry = setTimeout(() => {
      this.logger.warn(`closing the egress listener of intern ${internId}: its command outlived the longest a command may run without renewing it`);
      void this.close({ socketPath });
    }, this.options.maxLifetimeMs);
    expiry.unref();
    this.expiries.set(socketPath, expiry);
  }

  async close(request: CloseEgressListenerRequest): Promise<{ closed: true }> {
    const expiry = this.expiries.get(request.socketPath);
    // Only a socket this process opened is closed: the path is a key, never a file name to act on.
    if (expiry === undefined) return { closed: true };
    clearTimeout(expiry);
    this.expiries.delete(request.socketPath);
    await this.options.proxy.close(request.socketPath);
    return { closed: true };
  }

  async closeAll(): Promise<void> {
    for (const expiry of this.expiries.values()) clearTimeout(expiry);
    this.expiries.clear();
    await this.options.proxy.closeAll();
  }
}
