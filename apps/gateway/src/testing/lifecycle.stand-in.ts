import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { CORRELATION_HEADER, RpcRequestPacket, ServiceErrorPayload, Subjects } from '@interns/contracts';

/** What the stand-in does with one request: answer, refuse, or stay silent (a frozen service). */
export type StandInBehaviour =
  | { response: unknown }
  | { err: ServiceErrorPayload | unknown }
  | 'silent';

export interface ReceivedRequest {
  subject: string;
  packet: RpcRequestPacket;
  correlationHeader: string | undefined;
}

/**
 * A stand-in for the lifecycle service on the real broker: plain subscriptions answering in the NestJS
 * microservices packet format, so the gateway is tested against the wire format without lifecycle itself.
 */
export class LifecycleStandIn {
  readonly received: ReceivedRequest[] = [];
  private subscriptions: Subscription[] = [];
  private behaviour: (request: ReceivedRequest) => StandInBehaviour = () => ({ err: 'no behaviour set' });

  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects,
  ) {}

  answer(behaviour: (request: ReceivedRequest) => StandInBehaviour): void {
    this.behaviour = behaviour;
  }

  async start(): Promise<void> {
    const lifecycle = this.subjects.lifecycle;
    const served = [
      lifecycle.listInterns,
      lifecycle.getIntern,
      lifecycle.createIntern,
      lifecycle.updateIntern,
      lifecycle.deleteIntern,
      lifecycle.provisionIntern,
      lifecycle.suspendIntern,
      lifecycle.internIcon,
    ];
    for (const subject of served) {
      this.subscriptions.push(this.nc.subscribe(subject, { callback: (_error, msg) => this.handle(subject, msg) }));
    }
    await this.nc.flush();
  }

  /** Unsubscribes: requests then find no responders, as when the service is down. */
  async stop(): Promise<void> {
    for (const subscription of this.subscriptions) subscription.unsubscribe();
    this.subscriptions = [];
    await this.nc.flush();
  }

  last(): ReceivedRequest {
    const request = this.received.at(-1);
    if (request === undefined) throw new Error('the stand-in received no request');
    return request;
  }

  private handle(subject: string, msg: Msg): void {
    const packet = msg.json<RpcRequestPacket>();
    const request: ReceivedRequest = { subject, packet, correlationHeader: msg.headers?.get(CORRELATION_HEADER) };
    this.received.push(request);
    const behaviour = this.behaviour(request);
    if (behaviour === 'silent') return;
    const reply =
      'response' in behaviour
        ? { id: packet.id, response: behaviour.response, isDisposed: true }
        : { id: packet.id, err: behaviour.err, isDisposed: true };
    msg.respond(JSON.stringify(reply));
  }
}
