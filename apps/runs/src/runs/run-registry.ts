import { randomUUID } from 'node:crypto';
import type { Subscription } from '@nats-io/transport-node';
import type { SessionChannel } from '@interns/messaging';
import type { LiveRun } from './live-run';

/** What the registry needs of a run it holds. */
export type HostedRun = Pick<LiveRun, 'receive' | 'finished' | 'shutdown'>;

/** How long a replica waits for another replica to confirm a message to a run it owns. */
const OWNER_REPLY_TIMEOUT_MS = 5000;

/**
 * The runs going on this replica (its `ownerId`), one per session: each serves its session's subject while it
 * goes, and leaves the registry (and the subject) when it has ended. A message for a session goes to its run
 * here, or over the session subject to the replica that holds it.
 */
export class RunRegistry {
  readonly ownerId = randomUUID();
  private readonly live = new Map<string, { run: HostedRun; subscription: Subscription }>();

  constructor(private readonly channel: SessionChannel) {}

  get size(): number {
    return this.live.size;
  }

  /** Whether this replica runs the session's run. */
  holds(sessionId: string): boolean {
    return this.live.has(sessionId);
  }

  /** Holds `run` until it has ended; it gets the messages sent to its session, from here or other replicas. */
  add(sessionId: string, run: HostedRun): void {
    const subscription = this.channel.serve(sessionId, (message) => run.receive(message));
    this.live.set(sessionId, { run, subscription });
    void run.finished.then(() => {
      subscription.unsubscribe();
      if (this.live.get(sessionId)?.run === run) this.live.delete(sessionId);
    });
  }

  /** Delivers a message to the session's run, wherever it runs; NO_OWNER when no replica serves the session. */
  async send(sessionId: string, message: Parameters<SessionChannel['send']>[1]) {
    const local = this.live.get(sessionId);
    if (local) return local.run.receive(message);
    return this.channel.send(sessionId, message, OWNER_REPLY_TIMEOUT_MS);
  }

  /** Ends this replica's runs (shutdown): attached clients get an error chunk, and the runs are recorded as cancelled. */
  async shutdown(): Promise<void> {
    await Promise.all([...this.live.values()].map(({ run }) => run.shutdown()));
  }
}
