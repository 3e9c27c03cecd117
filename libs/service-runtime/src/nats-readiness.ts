import type { NatsConnection } from '@nats-io/transport-node';

export type NatsLinkState = 'connected' | 'reconnecting' | 'closed';

/** What readiness needs to know about one NATS connection. */
export interface NatsReadiness {
  readonly connection: NatsConnection;
  state(): NatsLinkState;
  isReady(): boolean;
}

const trackers = new WeakMap<NatsConnection, NatsReadiness>();

/**
 * Follows `nc.status()` so readiness can tell a connection that is reconnecting from a live one
 * (`isClosed()` alone stays false for the whole outage while the client keeps retrying).
 * Idempotent per connection: call it right after connecting so no status event is missed.
 */
export function natsReadiness(nc: NatsConnection): NatsReadiness {
  const known = trackers.get(nc);
  if (known) return known;
  let link: NatsLinkState = nc.isClosed() ? 'closed' : 'connected';
  const tracker: NatsReadiness = {
    connection: nc,
    state: () => (nc.isClosed() ? 'closed' : link),
    isReady: () => tracker.state() === 'connected' && !nc.isDraining(),
  };
  trackers.set(nc, tracker);
  void (async () => {
    for await (const status of nc.status()) {
      switch (status.type) {
        case 'disconnect':
        case 'reconnecting':
        case 'staleConnection':
          link = 'reconnecting';
          break;
        case 'reconnect':
          link = 'connected';
          break;
        case 'close':
          link = 'closed';
          break;
        default:
          break;
      }
    }
  })().catch(() => {
    // The status iterator only ends with the connection; isClosed() then answers for it.
  });
  return tracker;
}
