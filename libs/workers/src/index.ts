export * from './leader-lease';
export * from './per-key-backoff';
export * from './work-signal';
export * from './worker-loop';
