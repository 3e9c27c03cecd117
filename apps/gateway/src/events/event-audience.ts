// events/: the workspace event stream, `GET /api/v1/events` (interface section 23): the sourced stream, the feed, its
// ring and readers, and who sees which event.
import { Logger } from '@nestjs/common';
import {
  callerOfParts,
  INTEGRATION_EVENT_TYPES,
  internVisibleTo,
  isIntegrationEventType,
  type Principal,
  type ReceivedIntegrationEvent,
  runViewerOf,
} from '@interns/contracts';
import { TtlCache } from '../door/ttl-cache';

/** Who may see one event: its workspace, its intern, and for a run's event the run's caller. */
export interface EventAudience {
  workspaceId: string;
  internId: string | null;
  /** A run's event: whose run it is (`callerId`; null when not known here). Null for other events. */
  run: { caller: string | null } | null;
}

/**
 * Whether the principal sees an event, by the rules every route applies (libs/contracts visibility): the intern
 * must be visible to it (its workspace; an intern key's own intern), and a run's event needs the run to be (a
 * member sees the runs it started; organization and intern keys all of them). A run whose caller is not known
 * here is shown only to those who see every run.
 */
export function audienceIncludes(audience: EventAudience, principal: Principal): boolean {
  if (audience.internId === null) return audience.workspaceId === principal.workspaceId && principal.kind !== 'intern';
  if (!internVisibleTo({ id: audience.internId, workspace_id: audience.workspaceId }, principal)) return false;
  if (audience.run === null) return true;
  const viewer = runViewerOf(principal);
  return viewer === null || viewer === audience.run.caller;
}

/** Which workspace an intern is in, asked of lifecycle (null: no such intern, or no answer). */
export type InternWorkspaceLookup = (internId: string) => Promise<string | null>;

export interface AudienceResolverOptions {
  lookUpWorkspace: InternWorkspaceLookup;
  /** How long a session's caller is remembered after its last run started: the feed's history window. */
  sessionMemoryMs: number;
  /** Entries of each map, at most (the oldest go first). */
  maxEntries: number;
}

/** An intern never changes workspace: its entry only makes room for others after a day. */
const INTERN_MEMORY_MS = 24 * 3600 * 1000;

/**
 * Finds each event's audience in the order the feed reads them, learning from the events themselves: lifecycle's
 * carry their workspace (so an intern's is noted), runs' do not (an intern's run events are routed by the intern's
 * workspace, asked of lifecycle when no lifecycle event told it), and `run.started` tells a session's caller, which
 * every run of the session shares. The feed reads its history window at start, longer than a run may last
 * (EXECUTION_DEADLINE_MS), so every run still going has been seen to start.
 */
export class AudienceResolver {
  private readonly logger = new Logger('AudienceResolver');
  private readonly workspaces: TtlCache<string, string>;
  private readonly callers: TtlCache<string, string | null>;

  constructor(private readonly options: AudienceResolverOptions) {
    this.workspaces = new TtlCache(INTERN_MEMORY_MS, options.maxEntries);
    this.callers = new TtlCache(options.sessionMemoryMs, options.maxEntries);
  }

  /** The event's audience; null when its workspace cannot be known (nobody is shown it). */
  async resolve(event: ReceivedIntegrationEvent): Promise<EventAudience | null> {
    if (!isIntegrationEventType(event.type)) return null;
    const internId = typeof event.data.intern_id === 'string' ? event.data.intern_id : null;
    if (internId !== null && event.workspace_id !== null) this.workspaces.set(internId, event.workspace_id);
    const workspaceId = event.workspace_id ?? (internId === null ? null : await this.workspaceOf(internId));
    if (workspaceId === null) return null;
    if (INTEGRATION_EVENT_TYPES[event.type].source !== 'runs') return { workspaceId, internId, run: null };
    return { workspaceId, internId, run: { caller: this.callerOf(event) } };
  }

  private callerOf(event: ReceivedIntegrationEvent): string | null {
    const sessionId = typeof event.data.session_id === 'string' ? event.data.session_id : null;
    if (sessionId === null) return null;
    if (event.type === 'run.started') this.callers.set(sessionId, callerOfParts(event.data));
    return this.callers.get(sessionId) ?? null;
  }

  private async workspaceOf(internId: string): Promise<string | null> {
    const known = this.workspaces.get(internId);
    if (known !== undefined) return known;
    try {
      const found = await this.options.lookUpWorkspace(internId);
      if (found !== null) this.workspaces.set(internId, found);
      return found;
    } catch (error) {
      this.logger.warn(`the workspace of intern ${internId} could not be looked up: ${error instanceof Error ? error.message : String(error)}`);
      return null;
    }
  }
}
