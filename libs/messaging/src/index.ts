export * from './nats-connection';
export * from './draining-nats.server';
export * from './rpc-client';
export * from './domain-error.filter';
export * from './http-error';
export * from './session-channel';
