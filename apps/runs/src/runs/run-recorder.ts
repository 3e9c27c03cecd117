import { eventMetadata } from '@interns/event-store';
import { sessionDecider, type RunProgressEvent, type SessionCommand, type SessionEvent, type SessionState } from '@interns/runs-domain';
import type { OwnedSession } from '../sessions/owned-session';

/**
 * What a run writes into its session, through the owner's kept session. Streamed output is held until the
 * model turn (or the run) reaches a point worth recording, so a turn's text is one OutputProduced event,
 * not one per chunk. Progress nothing waits on (a model turn starting, the output of a turn that ends the
 * run) is deferred to the run's next append instead of a transaction of its own: a `/say hi` turn commits
 * twice (start, end) rather than four times. Deferred progress is lost only with the process, whose runs
 * the reconciler ends `failed` anyway.
 */
export class RunRecorder {
  private unrecordedOutput = '';
  private deferred: RunProgressEvent[] = [];

  constructor(
    private readonly session: OwnedSession,
    private readonly run: { runId: string; callerId: string; correlationId: string },
  ) {}

  /** The session as of the run's last write, with the deferred progress applied. */
  get state(): SessionState {
    return this.deferred.reduce<SessionState>(sessionDecider.evolve, this.session.state);
  }

  /** Progress written with the run's next append (`record`), in order, before that append's own events. */
  defer(progress: RunProgressEvent[]): void {
    this.deferred.push(...progress);
  }

  /** Output streamed to the client and not recorded yet. */
  output(text: string): void {
    this.unrecordedOutput += text;
  }

  /** The output not recorded yet, as the progress event that records it (none when there is none). */
  takeOutput(): RunProgressEvent[] {
    if (this.unrecordedOutput.length === 0) return [];
    const text = this.unrecordedOutput;
    this.unrecordedOutput = '';
    return [{ type: 'OutputProduced', data: { runId: this.run.runId, text } }];
  }

  /** Appends progress events and then a command's events, in one append; returns the events as stored. */
  record(progress: RunProgressEvent[], command?: SessionCommand, correlationId = this.run.correlationId): Promise<SessionEvent[]> {
    const events = this.deferred.length === 0 ? progress : [...this.deferred, ...progress];
    this.deferred = [];
    const commands: SessionCommand[] = [];
    if (events.length > 0) commands.push({ type: 'RecordProgress' as const, runId: this.run.runId, events });
    if (command !== undefined) commands.push(command);
    const metadata = eventMetadata({ correlationId, actor: this.run.callerId });
    if (commands.length === 0) return Promise.resolve([]);
    return this.session.execute(commands, metadata);
  }
}
