import { eventMetadata } from '@interns/event-store';
import type { RunProgressEvent, SessionCommand, SessionEvent, SessionState } from '@interns/runs-domain';
import type { OwnedSession } from '../sessions/owned-session';

/**
 * What a run writes into its session, through the owner's kept session. Streamed output is held until the
 * model turn (or the run) reaches a point worth recording, so a turn's text is one OutputProduced event,
 * not one per chunk.
 */
export class RunRecorder {
  private unrecordedOutput = '';

  constructor(
    private readonly session: OwnedSession,
    private readonly run: { runId: string; callerId: string; correlationId: string },
  ) {}

  /** The session as of the run's last write. */
  get state(): SessionState {
    return this.session.state;
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
    const commands: SessionCommand[] = [];
    if (progress.length > 0) commands.push({ type: 'RecordProgress' as const, runId: this.run.runId, events: progress });
    if (command !== undefined) commands.push(command);
    const metadata = eventMetadata({ correlationId, actor: this.run.callerId });
    if (commands.length === 0) return Promise.resolve([]);
    return this.session.execute(commands, metadata);
  }
}
