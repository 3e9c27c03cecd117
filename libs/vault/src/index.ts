export * from './vault-keys';
