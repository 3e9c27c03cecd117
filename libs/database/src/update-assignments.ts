/** What an UPDATE's `SET` list binds: `column = $n` pieces and their values, numbered from $1 in order. */
export interface Assignments {
  sets: string[];
  values: unknown[];
}

/** A bare SQL identifier: the only column names `assignments` writes into SQL text. */
const COLUMN_NAME = /^[a-z_][a-z0-9_]*$/;

/**
 * The `SET` list of a projection's dynamic UPDATE: every value bound as a parameter; the columns named in
 * `jsonColumns` JSON-encoded (null stays SQL NULL) and cast to jsonb. Column names become SQL text, so the callers
 * pass literal names only, and anything but a bare lower-case identifier is refused rather than written.
 * The caller appends its own parameters (revision, id) after `values`.
 */
export function assignments(changes: Readonly<Record<string, unknown>>, jsonColumns: readonly string[] = []): Assignments {
  const sets: string[] = [];
  const values: unknown[] = [];
  for (const [column, value] of Object.entries(changes)) {
    if (!COLUMN_NAME.test(column)) throw new Error(`not a column name: ${JSON.stringify(column)}`);
    const isJson = jsonColumns.includes(column);
    values.push(isJson && value !== null ? JSON.stringify(value) : value);
    sets.push(`${column} = $${values.length}${isJson ? '::jsonb' : ''}`);
  }
  return { sets, values };
}
