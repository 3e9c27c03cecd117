import { isHostname } from '@interns/contracts';
import type { DoorIntern, InternByHostnameReply, Subjects } from '@interns/contracts';
import type { RpcClient } from '@interns/messaging';
import { TtlCache } from './ttl-cache';

/** Hostnames remembered at once; more distinct names within a TTL only cost lifecycle lookups. */
const MAX_HOSTNAMES = 10_000;

export interface InternDirectoryOptions {
  rpc: RpcClient;
  subjects: Subjects['lifecycle'];
  /** AUTH_CACHE_TTL_MS: how long an answer is trusted when no event dropped it first. */
  ttlMs: number;
  now?: () => number;
}

/**
 * Which intern a door hostname names, asked of lifecycle (`intern-by-hostname`) and cached for AUTH_CACHE_TTL_MS.
 * The intern's status change or deletion (integration events, see DoorCacheEvictions) drops its entry at once; any
 * status change also drops the names that named no intern, since a provisioning just gave one its hostname.
 */
export class InternDirectory {
  private readonly known: TtlCache<string, DoorIntern>;
  private readonly unknown: TtlCache<string, true>;

  constructor(private readonly options: InternDirectoryOptions) {
    this.known = new TtlCache(options.ttlMs, MAX_HOSTNAMES, options.now);
    this.unknown = new TtlCache(options.ttlMs, MAX_HOSTNAMES, options.now);
  }

  /** The intern, or null when no intern has this hostname. `fresh` skips the cache (and refills it). */
  async lookup(hostname: string, deadline: { timeoutMs: number; correlationId: string }, fresh = false): Promise<DoorIntern | null> {
    if (!isHostname(hostname)) return null;
    if (!fresh) {
      const cached = this.known.get(hostname);
      if (cached !== undefined) return cached;
      if (this.unknown.get(hostname) !== undefined) return null;
    }
    const { intern } = await this.options.rpc.request<InternByHostnameReply>(this.options.subjects.internByHostname, { hostname }, deadline);
    if (intern === null) {
      this.known.delete(hostname);
      this.unknown.set(hostname, true);
    } else {
      this.unknown.delete(hostname);
      this.known.set(hostname, intern);
    }
    return intern;
  }

  /** The intern's status changed or it is gone: its entry goes, and so do the names that named no intern. */
  evictIntern(internId: string): void {
    this.known.deleteWhere((intern) => intern.id === internId);
    this.unknown.deleteWhere(() => true);
  }
}
