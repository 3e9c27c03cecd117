/**
 * The platform's services, named in subjects (`<prefix>.<service>.cmd.<name>`) and in integration events' `source`.
 * A file of its own so both subjects.ts and integration-events.ts can import it without importing each other.
 */
export const SERVICE_NAMES = ['gateway', 'lifecycle', 'runs', 'analytics', 'webhooks', 'egress'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];
