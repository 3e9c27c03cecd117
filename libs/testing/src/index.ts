export * from './test-database';
export * from './service-process';
export * from './platform';
export * from './service-process.spec-kit';
export * from './sse-client';
