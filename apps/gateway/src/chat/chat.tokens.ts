import type { NatsConnection } from '@nats-io/transport-node';
import type { SessionChannel } from '@interns/messaging';
import type { ChatTurnLimiter } from './chat-turn-limiter';

/** What chat and invoke need besides the service client: the stream subscriptions, the limiter, the session channel. */
export interface ChatDependencies {
  nats: NatsConnection;
  limiter: ChatTurnLimiter;
  channel: SessionChannel;
}

export const CHAT_DEPENDENCIES = Symbol('CHAT_DEPENDENCIES');
