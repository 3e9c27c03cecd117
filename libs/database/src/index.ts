export * from './database';
export * from './database-roles';
export * from './pg-errors';
export * from './prepared-reads';
export * from './database-drop';
export * from './update-assignments';
