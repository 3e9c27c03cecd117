/** The PostgreSQL error codes this codebase reacts to (https://www.postgresql.org/docs/current/errcodes-appendix.html). */
export const PG_ERROR_CODES = {
  uniqueViolation: '23505',
  duplicateDatabase: '42P04',
  /** CREATE ROLE of a name that exists (another process created it first). */
  duplicateObject: '42710',
  /** A role lacks a privilege (a service's role on another service's schema). */
  insufficientPrivilege: '42501',
  serializationFailure: '40001',
  deadlockDetected: '40P01',
  /** statement_timeout (DATABASE_STATEMENT_TIMEOUT_MS) or a cancel request ended the statement. */
  queryCanceled: '57014',
} as const;

/** pg errors reach us as pg's DatabaseError or wrapped in TypeORM's QueryFailedError, which copies these fields. */
export interface PgErrorFields {
  code?: string;
  constraint?: string;
  schema?: string;
  table?: string;
}

/** The one way to read a pg error's fields: anything else reads as none. */
export function pgErrorFields(error: unknown): PgErrorFields {
  return typeof error === 'object' && error !== null ? (error as PgErrorFields) : {};
}

/** PostgreSQL refused a duplicate on `constraint` (a unique index or key, named by the migration). */
export function isUniqueViolation(error: unknown, constraint: string): boolean {
  const fields = pgErrorFields(error);
  return fields.code === PG_ERROR_CODES.uniqueViolation && fields.constraint === constraint;
}

/** The transaction lost a race (serialization failure or deadlock) and may simply run again. */
export function isTransactionRace(error: unknown): boolean {
  const { code } = pgErrorFields(error);
  return code === PG_ERROR_CODES.serializationFailure || code === PG_ERROR_CODES.deadlockDetected;
}
