import { Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { CACHE_EVICTING_EVENTS, MalformedEventError, parseIntegrationEvent } from '@interns/contracts';
import type { Subjects } from '@interns/contracts';
import type { DaemonTokenCache } from './daemon-token-cache';
import type { InternDirectory } from './intern-directory';

/**
 * Drops the door's cached facts about an intern when lifecycle publishes its status change or deletion (a plain
 * subscription to those integration events, each gateway replica its own). Without it a suspend would still be let
 * through for up to AUTH_CACHE_TTL_MS; with it, for about the outbox relay's delay. A missed event (a reconnect) only
 * leaves an entry to live out its TTL, which is why no durable consumer is needed.
 */
export class DoorCacheEvictions implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('DoorCacheEvictions');
  private subscriptions: Subscription[] = [];

  constructor(
    private readonly nats: NatsConnection,
    private readonly subjects: Subjects,
    private readonly directory: InternDirectory,
    private readonly tokens: DaemonTokenCache,
  ) {}

  onModuleInit(): void {
    this.subscriptions = CACHE_EVICTING_EVENTS.gateway.map((type) =>
      this.nats.subscribe(this.subjects.integrationEvent(type), {
        callback: (error, message) => {
          if (error === null) this.evict(message.data);
        },
      }),
    );
  }

  onApplicationShutdown(): void {
    for (const subscription of this.subscriptions) subscription.unsubscribe();
    this.subscriptions = [];
  }

  /** One event's intern loses its entries; a message that names none is logged and skipped. */
  evict(payload: Uint8Array): void {
    try {
      const internId = parseIntegrationEvent(payload).data.intern_id;
      if (typeof internId !== 'string') throw new MalformedEventError('data.intern_id is not a string');
      this.directory.evictIntern(internId);
      this.tokens.evictIntern(internId);
    } catch (error) {
      this.logger.warn(`an intern event could not be read: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}
