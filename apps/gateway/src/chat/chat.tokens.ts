import type { NatsConnection } from '@nats-io/transport-node';
import type { SessionChannel } from '@interns/messaging';

/** What chat needs besides the service client and the turn counter: the stream subscriptions and the session channel. */
export interface ChatDependencies {
  nats: NatsConnection;
  channel: SessionChannel;
}

export const CHAT_DEPENDENCIES = Symbol('CHAT_DEPENDENCIES');
