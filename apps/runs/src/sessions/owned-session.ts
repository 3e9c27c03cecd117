import { type EventMetadata, retryOnConcurrency } from '@interns/event-store';
import type { SessionCommand, SessionEvent, SessionState } from '@interns/runs-domain';
import type { SessionSnapshot, SessionStreams } from './session-streams';

/**
 * The session as the owner of its going run keeps it: every command is decided on the kept state and
 * appended at the kept version, and the state moves on with what was stored. The stream is read again only
 * when another writer got in between (a concurrency conflict), so a run's record costs work linear in its
 * events, not a whole reload per event.
 */
export class OwnedSession {
  /** One write at a time: the run's own writes (loop, steering, answers) never race each other for a version. */
  private writes: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly streams: SessionStreams,
    readonly sessionId: string,
    private snapshot: SessionSnapshot,
  ) {}

  get state(): SessionState {
    return this.snapshot.state;
  }

  /** Decides the commands in order and appends their events at once; returns the events as stored. */
  execute(commands: SessionCommand[], metadata: EventMetadata): Promise<SessionEvent[]> {
    const write = this.writes.then(() => this.write(commands, metadata));
    this.writes = write.catch(() => undefined);
    return write;
  }

  private write(commands: SessionCommand[], metadata: EventMetadata): Promise<SessionEvent[]> {
    return retryOnConcurrency(async (attempt) => {
      if (attempt > 1) await this.reload();
      const { events, version, state } = await this.streams.executeAt(this.sessionId, this.snapshot, commands, metadata);
      this.snapshot = { version, state };
      return events;
    });
  }

  /**
   * Catches up with what another writer appended (e.g. a replica that took this run for an orphan), before
   * deciding again: a refusal then leaves the state the owner sees as the stream has it.
   */
  private async reload(): Promise<void> {
    const { version, state } = await this.streams.load(this.sessionId);
    this.snapshot = { version, state };
  }
}
