import type { NatsConnection, Msg, Subscription } from '@nats-io/transport-node';
import type { CustomStrategy, NatsContext, WritePacket } from '@nestjs/microservices';
import { ServerNats } from '@nestjs/microservices';
import type { ServiceName } from '@interns/contracts';
import { natsTransportOptions } from './nats-connection';
import type { NatsSecurity } from './nats-credentials';
import { LeanNatsHandler, LeanRequestObserver, observeNothing, serveLeanRequest } from './lean-nats-handler';

/**
 * How long a stopping service waits for its NATS handlers in flight. Equal to the default lifecycle route
 * deadline: past it the requester has given up (408), so a handler still running has nobody to answer.
 */
export const HANDLER_DRAIN_TIMEOUT_MS = 10_000;

type ServerNatsOptions = ConstructorParameters<typeof ServerNats>[0];

/**
 * Nest's NATS server whose `close()` loses no request. Nest's own graceful shutdown unsubscribes (a message
 * the broker already routed to this replica is then dropped and its requester waits out its deadline),
 * waits a fixed grace period and closes the connection, dropping the replies of handlers that took longer.
 * This one, in order:
 *  1. drains every subscription: UNSUB, then a round trip to the broker, so what was routed here before the
 *     UNSUB is still handled and everything after goes to the other members of the queue group;
 *  2. waits until every request taken has been answered (at most `handlerDrainTimeoutMs`);
 *  3. flushes the replies to the broker and closes the connection.
 */
export class DrainingNatsServer extends ServerNats {
  private readonly served: Subscription[] = [];
  /** Requests taken and not yet answered. */
  private readonly unanswered = new Set<Msg>();
  private allAnswered: (() => void) | null = null;
  private leanHandlers: readonly LeanNatsHandler<unknown>[] = [];
  private observeLean: LeanRequestObserver = observeNothing;

  constructor(
    private readonly serverOptions: ServerNatsOptions,
    private readonly handlerDrainTimeoutMs = HANDLER_DRAIN_TIMEOUT_MS,
  ) {
    // Nest's grace period is replaced by the drain below.
    super({ ...serverOptions, gracefulShutdown: false });
  }

  /**
   * Handlers to serve on the lean path (see LeanNatsHandler), before `listen`. Their subjects must not also
   * be `@MessagePattern`s: one subscription per subject and queue group.
   */
  serveLean(handlers: readonly LeanNatsHandler<unknown>[], observe: LeanRequestObserver = observeNothing): void {
    this.leanHandlers = handlers;
    this.observeLean = observe;
  }

  /** One subscription per handler, as Nest's, but kept so that `close()` can drain them. */
  override bindEvents(client: NatsConnection): void {
    for (const [channel, handler] of this.messageHandlers) {
      const queue = (handler.extras?.queue as string | undefined) ?? this.serverOptions.queue;
      this.served.push(client.subscribe(channel, { queue, callback: this.getMessageHandler(channel).bind(this) }));
    }
    for (const handler of this.leanHandlers) {
      if (this.messageHandlers.has(handler.subject)) throw new Error(`${handler.subject} is both a lean handler and a @MessagePattern`);
      const callback = (error: Error | null, message: Msg) => {
        // Only requests are served; a subscription error (a permissions violation) is the connection's to report.
        if (error !== null || !message.reply) return;
        this.unanswered.add(message);
        void serveLeanRequest(handler, message, this.observeLean).finally(() => this.answered(message));
      };
      this.served.push(client.subscribe(handler.subject, { queue: this.serverOptions.queue, callback }));
    }
  }

  /**
   * A request counts as in flight until its reply is published. Nest's `handleMessage` settles earlier
   * than that when a handler's result is an Observable (every handler behind an interceptor), so the end
   * is taken from the last reply packet instead (see `getPublisher`).
   */
  override async handleMessage(channel: string, message: Msg): Promise<unknown> {
    // Every subscription serves a registered handler (bindEvents), so a reply subject is all it takes.
    // (getHandlerByPattern would try to JSON.parse the subject on every message: measurable under load.)
    if (message.reply) this.unanswered.add(message);
    try {
      return await super.handleMessage(channel, message);
    } catch (error) {
      this.answered(message);
      throw error;
    }
  }

  override getPublisher(message: Msg, id: string, context: NatsContext): (response: WritePacket) => unknown {
    const publish = super.getPublisher(message, id, context);
    if (!this.unanswered.has(message)) return publish;
    // Nest marks the last packet of a reply stream `isDisposed` (a handler's error included).
    return (response) => {
      try {
        return publish(response);
      } finally {
        if (response.isDisposed) this.answered(message);
      }
    };
  }

  override async close(): Promise<void> {
    const connection = this.connection();
    if (connection !== null && !connection.isClosed()) {
      await Promise.allSettled(this.served.splice(0).map((subscription) => subscription.drain()));
      await this.requestsAnswered();
      await connection.flush().catch(() => undefined);
    }
    await super.close();
  }

  /** Requests taken and not yet answered (for tests and diagnostics). */
  get requestsInFlight(): number {
    return this.unanswered.size;
  }

  private answered(message: Msg): void {
    if (!this.unanswered.delete(message)) return;
    if (this.unanswered.size === 0) this.allAnswered?.();
  }

  private connection(): NatsConnection | null {
    try {
      return this.unwrap<NatsConnection>();
    } catch {
      return null; // never listened
    }
  }

  private async requestsAnswered(): Promise<void> {
    if (this.unanswered.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((done) => {
        this.allAnswered = done;
      }),
      new Promise<void>((done) => {
        timer = setTimeout(done, this.handlerDrainTimeoutMs);
      }),
    ]);
    clearTimeout(timer);
    this.allAnswered = null;
  }
}

/** `app.connectMicroservice` options: queue group `<service>` served by a `DrainingNatsServer`. */
export function drainingNatsStrategy(options: {
  url: string;
  queue: ServiceName;
  security?: NatsSecurity;
  handlerDrainTimeoutMs?: number;
}): CustomStrategy & { strategy: DrainingNatsServer } {
  const { options: serverOptions } = natsTransportOptions(options);
  return { strategy: new DrainingNatsServer(serverOptions ?? {}, options.handlerDrainTimeoutMs) };
}
