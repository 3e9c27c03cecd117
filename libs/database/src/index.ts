export * from './database';
export * from './pg-errors';
