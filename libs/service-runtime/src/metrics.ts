/**
 * The process registry and metric helpers live in `@interns/metrics`, below this lib, so that libraries this
 * one builds on (messaging, the event store) can add their metrics to the same registry without a cycle.
 */
export * from '@interns/metrics';
