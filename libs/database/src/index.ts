export * from './database';
export * from './pg-errors';
export * from './prepared-reads';
