/** Who and what caused an event; present on every event. */
export interface EventMetadata {
  /** Minted by the gateway per request and carried through every hop. */
  correlation_id: string;
  /** Event id or command id that caused this event; null for a client's direct command. */
  causation_id: string | null;
  /** Member or API key id; null for the system itself. */
  actor: string | null;
  [key: string]: unknown;
}

/** An event as a command handler hands it to `appendToStream`. */
export interface NewEvent {
  /** Give a stable id to make a retried append idempotent; defaults to a fresh UUID. */
  eventId?: string;
  type: string;
  data: Record<string, unknown>;
  metadata: EventMetadata;
  /** Shape version of `data`; defaults to 1. */
  schemaVersion?: number;
}

/** An event as stored. Positions are bigint/xid8 values, kept as decimal strings so no precision is lost. */
export interface StoredEvent {
  globalPosition: string;
  transactionId: string;
  streamId: string;
  streamType: string;
  streamVersion: number;
  eventId: string;
  type: string;
  schemaVersion: number;
  data: Record<string, unknown>;
  metadata: EventMetadata;
  createdAt: Date;
}
