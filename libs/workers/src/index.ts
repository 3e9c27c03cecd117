export * from './leader-lease';
export * from './work-signal';
export * from './worker-loop';
