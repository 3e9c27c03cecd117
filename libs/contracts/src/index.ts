export * from './subjects';
export * from './errors';
export * from './principal';
export * from './intern';
export * from './validation';
export * from './rpc';
export * from './config';
