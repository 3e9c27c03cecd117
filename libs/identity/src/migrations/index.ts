import { CreateIdentityTables1763740000000 } from './1763740000000-create-identity-tables.migration';

/** Every migration of the `identity` schema, oldest first. */
export const identityMigrations = [CreateIdentityTables1763740000000];
