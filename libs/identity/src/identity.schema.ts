/** The gateway's own PostgreSQL schema: organizations, workspaces, members and API key hashes. */
export const IDENTITY_SCHEMA = 'identity';
