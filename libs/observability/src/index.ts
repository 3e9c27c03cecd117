export * from './request-context';
export * from './json-logger';
export * from './log-levels';
export * from './tracing';
export * from './trace-carriers';
export * from './nats-request-context.interceptor';
export * from './tracing-shutdown';
export * from './log-redaction';
