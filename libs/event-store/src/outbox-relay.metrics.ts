import { counter, gauge } from '@interns/metrics';

/** A relay's view of its own backlog, asked at scrape time so a stalled relay still shows a growing lag. */
export interface RelayLagSource {
  lagSeconds(): Promise<number>;
}

/** A scrape must not hang on a database that does not answer. */
const LAG_MEASURE_TIMEOUT_MS = 2_000;

/** Running relays of this process by `relay` label (leaders and standbys: the lag is a fact of the database). */
const lagSources = new Map<string, RelayLagSource>();

const publishedTotal = counter<'relay'>({
  name: 'interns_outbox_events_published_total',
  help: 'Messages (integration events) the outbox relay of this process published to JetStream',
  labelNames: ['relay'],
});

const parkedTotal = counter<'relay' | 'reason'>({
  name: 'interns_outbox_parked_total',
  help: 'Messages the outbox relay parked instead of publishing (reason: refused by NATS, or untranslatable)',
  labelNames: ['relay', 'reason'],
});

const lagGauge = gauge<'relay'>({
  name: 'interns_outbox_relay_lag_seconds',
  help: 'Age of the oldest committed event not yet published by the relay (0 when caught up), measured at scrape',
  labelNames: ['relay'],
  async collect() {
    await Promise.all([...lagSources].map(([relay, source]) => measureLag(relay, source)));
  },
});

async function measureLag(relay: string, source: RelayLagSource): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const seconds = await Promise.race([
      source.lagSeconds(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('lag measurement timed out')), LAG_MEASURE_TIMEOUT_MS);
      }),
    ]);
    lagGauge.set({ relay }, seconds);
  } catch {
    // Unknown is shown as absent rather than as a stale number; the database's health check says why.
    lagGauge.remove({ relay });
  } finally {
    clearTimeout(timer);
  }
}

/** Why a message was parked: NATS refused it (too large ...), or what an event stands for could not be worked out. */
export type ParkReason = 'refused' | 'untranslatable';

/** Relay metrics under one `relay` label (low cardinality: one per service). */
export class OutboxRelayMetrics {
  constructor(private readonly relay: string) {}

  /** From `start()` to `stop()`, the relay's lag is measured at every scrape. */
  watchLag(source: RelayLagSource): void {
    lagSources.set(this.relay, source);
  }

  unwatchLag(source: RelayLagSource): void {
    if (lagSources.get(this.relay) !== source) return;
    lagSources.delete(this.relay);
    lagGauge.remove({ relay: this.relay });
  }

  published(count: number): void {
    publishedTotal.inc({ relay: this.relay }, count);
  }

  parked(reason: ParkReason): void {
    parkedTotal.inc({ relay: this.relay, reason });
  }
}
