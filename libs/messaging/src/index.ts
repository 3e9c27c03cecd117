export * from './nats-connection';
export * from './nats-credentials';
export * from './draining-nats.server';
export * from './rpc-client';
export * from './domain-error.filter';
export * from './session-channel';
export * from './jetstream-stream';
export * from './durable-stream-consumer';
