import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { RequestError } from '@nats-io/transport-node';
import { isSessionMessageReply, sessionRefusal, sessionSubjectToken } from '@interns/contracts';
import type { SessionMessage, SessionMessageReply, Subjects } from '@interns/contracts';

/** Nobody serves the session subject: no run of the session is going on any replica. */
export const NO_OWNER = 'no_owner' as const;

/**
 * Messages to the replica that owns a session's going run, on `runs.session.<token>`: plain JSON request/reply
 * (not the Nest packet: the subscription is per session and made by the owner at run time).
 */
export class SessionChannel {
  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects['runs'],
  ) {}

  subjectOf(sessionId: string): string {
    return this.subjects.session(sessionSubjectToken(sessionId));
  }

  /** The owner's reply, or NO_OWNER. A timeout (an owner that froze) or a reply that is not a SessionMessageReply rejects. */
  async send(sessionId: string, message: SessionMessage, timeoutMs: number): Promise<SessionMessageReply | typeof NO_OWNER> {
    try {
      const reply: unknown = (await this.nc.request(this.subjectOf(sessionId), JSON.stringify(message), { timeout: timeoutMs })).json();
      // A refusal's reason goes on to the HTTP caller as it is: one outside ERROR_REASONS must not cross.
      if (!isSessionMessageReply(reply)) throw new Error(`the owner of session ${sessionId} sent no session reply: ${JSON.stringify(reply)}`);
      return reply;
    } catch (error) {
      if (error instanceof RequestError && error.isNoResponders()) return NO_OWNER;
      throw error;
    }
  }

  /** Fire and forget (a client that left: nobody waits for the answer). */
  notify(sessionId: string, message: SessionMessage): void {
    this.nc.publish(this.subjectOf(sessionId), JSON.stringify(message));
  }

  /** The owner's side: serves one session's messages until unsubscribed. */
  serve(sessionId: string, handler: (message: SessionMessage) => Promise<SessionMessageReply>): Subscription {
    return this.nc.subscribe(this.subjectOf(sessionId), {
      callback: (error, msg: Msg) => {
        if (error) return;
        let message: SessionMessage;
        try {
          message = msg.json<SessionMessage>();
        } catch {
          msg.respond(JSON.stringify(sessionRefusal('invalid_body', 'not a session message')));
          return;
        }
        handler(message).then(
          (reply) => msg.respond(JSON.stringify(reply)),
          (failure: unknown) =>
            msg.respond(JSON.stringify(sessionRefusal('internal_error', failure instanceof Error ? failure.message : String(failure)))),
        );
      },
    });
  }
}
