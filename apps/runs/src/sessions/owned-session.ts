// sessions/: the session stream (every session write, each run's end logged) and its read model; runs/ builds on it.
import type { EventMetadata } from '@interns/event-store';
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

  /**
   * On a conflict the session is read again (e.g. a replica took this run for an orphan) and kept before the
   * commands are decided again: a refusal then leaves the state the owner sees as the stream has it.
   */
  private async write(commands: SessionCommand[], metadata: EventMetadata): Promise<SessionEvent[]> {
    const keep = ({ version, state }: SessionSnapshot): void => {
      this.snapshot = { version, state };
    };
    const written = await this.streams.executeFrom(this.sessionId, this.snapshot, commands, metadata, { onReloaded: keep });
    keep(written);
    return written.events;
  }
}
