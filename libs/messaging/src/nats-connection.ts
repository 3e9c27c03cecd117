import { connect, NatsConnection } from '@nats-io/transport-node';
import type { NatsOptions } from '@nestjs/microservices';
import { Transport } from '@nestjs/microservices';
import type { NatsProcess, ServiceName } from '@interns/contracts';
import { type NatsSecurity, natsSecurityOptions } from './nats-credentials';

/**
 * Shared by every NATS connection of the platform: never give up reconnecting (the client's default
 * stops after about 20 s of broker outage) and wait for the broker at start-up too.
 */
export const RECONNECT_OPTIONS = {
  maxReconnectAttempts: -1,
  reconnectTimeWait: 500,
  waitOnFirstConnect: true,
} as const;

/**
 * Without this the client builds two Error objects (stack captured) on every request just in case it
 * fails: about a tenth of the gateway's CPU under load. Failures still come as the same error classes.
 */
const REQUEST_OPTIONS = { noAsyncTraces: true } as const;

/** `as` names the NATS user (its credentials file) when it differs from the connection's name; `security` unset: anonymous. */
export function connectNats(options: { url: string; name: string; as?: NatsProcess; security?: NatsSecurity }): Promise<NatsConnection> {
  const security = options.security ? natsSecurityOptions(options.as ?? (options.name as NatsProcess), options.security) : {};
  return connect({ servers: options.url, name: options.name, ...RECONNECT_OPTIONS, ...REQUEST_OPTIONS, ...security });
}

/**
 * Options for `app.connectMicroservice`: one queue group per service so replicas share the work. Services
 * serve them through `drainingNatsStrategy`, whose shutdown replaces Nest's fixed grace period below.
 */
export function natsTransportOptions(options: { url: string; queue: ServiceName; security?: NatsSecurity }): NatsOptions {
  return {
    transport: Transport.NATS,
    options: {
      servers: options.url,
      name: options.queue,
      queue: options.queue,
      gracefulShutdown: true,
      gracePeriod: 2000,
      ...RECONNECT_OPTIONS,
      ...natsSecurityOptions(options.queue, options.security),
    },
  };
}

/**
 * Follows a connection's status so callers can fail fast while the broker is away instead of
 * letting requests queue up until their deadline.
 */
export class ConnectionState {
  private connected = true;

  constructor(readonly nc: NatsConnection) {
    void this.follow();
  }

  get isConnected(): boolean {
    return this.connected && !this.nc.isClosed();
  }

  private async follow(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === 'disconnect' || status.type === 'reconnecting') this.connected = false;
      if (status.type === 'reconnect') this.connected = true;
    }
  }
}
