export * from './event.types';
export * from './event-store.migration';
export * from './concurrency.error';
export * from './upcaster';
export * from './postgres-event-store';
export * from './event-tail';
export * from './outbox-relay';
export * from './leader-lease';
