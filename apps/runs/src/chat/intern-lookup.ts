import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import { DomainError, internVisibleTo, isUuid } from '@interns/contracts';
import type { InternView, RequestContext, Subjects } from '@interns/contracts';
import { RpcClient, visibleIntern } from '@interns/messaging';

/** Interns remembered at once; more distinct interns within a TTL only cost lifecycle lookups. */
const MAX_INTERNS = 10_000;

/**
 * What a run start takes from its intern, as lifecycle last told it: visibility is judged on `id` and
 * `workspace_id` (internVisibleTo), a start needs `running`, the run gets `model` and `instructions`. `haltSeq`:
 * the intern's count in `runs.intern_halts`, read before lifecycle was asked; the start statement re-checks it.
 */
export type RunnableIntern = Pick<InternView, 'id' | 'workspace_id' | 'status' | 'model' | 'instructions'> & { haltSeq: number };

export interface InternLookupOptions {
  nc: NatsConnection;
  subjects: Subjects;
  dataSource: DataSource;
  /** AUTH_CACHE_TTL_MS: how long a lookup is trusted when no notice dropped it first (0: not cached). */
  ttlMs: number;
  now?: () => number;
}

/**
 * The intern a chat, invoke or run route names, as the caller may see it: lifecycle applies visibility (404),
 * and a new run needs the intern `running` (409 `intern_not_running`).
 *
 * A run start's lookup (`running`) of a running intern is cached for AUTH_CACHE_TTL_MS, and dropped at once when lifecycle
 * notices a committed change of the intern (`internChanged`, published before the changing command answers):
 * visibility is applied to the cached intern here with lifecycle's own rule (internVisibleTo), so any caller sees
 * exactly what lifecycle would answer it. A suspend or delete that ended the intern's runs also moved its
 * `runs.intern_halts` count, which the start statement checks: a stale entry can then not start a run (the start
 * is refused, the entry dropped and lifecycle asked again; docs/architecture.md, "The chat turn's fast path").
 */
export class InternLookup {
  private readonly rpc: RpcClient;
  private readonly cached = new Map<string, { intern: RunnableIntern; expiresAt: number }>();
  private subscription: Subscription | null = null;
  private readonly now: () => number;

  constructor(private readonly options: InternLookupOptions) {
    this.rpc = new RpcClient(options.nc);
    this.now = options.now ?? Date.now;
  }

  onModuleInit(): void {
    this.subscription = this.options.nc.subscribe(this.options.subjects.internChanged, {
      callback: (error, message) => {
        if (error === null) this.evict(message.string());
      },
    });
  }

  onApplicationShutdown(): void {
    this.subscription?.unsubscribe();
    this.subscription = null;
  }

  /** The intern when the caller may see it and it is `running`, from the cache when lifecycle told it lately. */
  async running(context: RequestContext, internId: string): Promise<RunnableIntern> {
    const intern = this.fromCache(internId) ?? (await this.lookUp(context, internId));
    // Lifecycle's own 404 for an intern the caller may not see (visible-intern.ts there).
    if (!internVisibleTo(intern, context.principal)) throw new DomainError('not_found', 'intern not found');
    if (intern.status !== 'running') {
      throw new DomainError('intern_not_running', `the intern is ${intern.status}, not running`);
    }
    return intern;
  }

  /** The intern in any status, when the caller may see it (else 404); always asked of lifecycle. */
  visible(context: RequestContext, internId: string): Promise<InternView> {
    return visibleIntern(this.rpc, this.options.subjects.lifecycle, context, internId);
  }

  /** Lifecycle changed the intern, or a start found it halted: the next lookup asks lifecycle. */
  evict(internId: string): void {
    this.cached.delete(internId);
  }

  private fromCache(internId: string): RunnableIntern | null {
    const entry = this.cached.get(internId);
    if (entry === undefined) return null;
    if (entry.expiresAt > this.now()) return entry.intern;
    this.cached.delete(internId);
    return null;
  }

  /**
   * Asks lifecycle (which judges visibility: its 404 is never cached). The halt count is read first: a halt
   * recorded after lifecycle answered then moves it past what the start statement expects.
   */
  private async lookUp(context: RequestContext, internId: string): Promise<RunnableIntern> {
    const haltSeq = await this.haltSeq(internId);
    const view = await this.visible(context, internId);
    const intern: RunnableIntern = {
      id: view.id,
      workspace_id: view.workspace_id,
      status: view.status,
      model: view.model,
      instructions: view.instructions,
      haltSeq,
    };
    this.remember(intern);
    return intern;
  }

  private async haltSeq(internId: string): Promise<number> {
    // Not an id at all: lifecycle answers 404 for it, with nothing to read here.
    if (!isUuid(internId)) return 0;
    const rows: { seq: string }[] = await this.options.dataSource.query(`SELECT seq::text AS seq FROM runs.intern_halts WHERE intern_id = $1`, [
      internId,
    ]);
    return rows.length === 0 ? 0 : Number(rows[0].seq);
  }

  /** Only a `running` intern: any other answer is asked again, so an intern that just started running is seen at once. */
  private remember(intern: RunnableIntern): void {
    if (this.options.ttlMs <= 0 || intern.status !== 'running') return;
    this.cached.delete(intern.id);
    // The oldest entry goes first (a Map keeps insertion order).
    if (this.cached.size >= MAX_INTERNS) this.cached.delete(this.cached.keys().next().value as string);
    this.cached.set(intern.id, { intern, expiresAt: this.now() + this.options.ttlMs });
  }
}
