/** One log call's parts, as the JSON logger writes them. */
export interface LogEntry {
  msg: string | undefined;
  /** The Nest context (`new Logger('Interns')`): the logging class or area. */
  context: string | undefined;
  /** An Error, or `{ stack }` when only a stack string was given. */
  err: unknown;
  /** Plain objects passed along (merged), and leftover values under `params`. */
  fields: Record<string, unknown> | undefined;
}

/** Nest's own test for a stack trace passed as a string (ConsoleLogger.isStackFormat). */
function isStack(value: unknown): value is string {
  return typeof value === 'string' && /\n[ \t]+at .+:\d+:\d+/.test(value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/**
 * Reads a LoggerService call the way Nest's ConsoleLogger does: `new Logger(ctx).x(message, ...params)`
 * appends the context as the last string; `error`/`fatal` take a stack before it (Nest passes undefined
 * when there is none). Errors become `err`, plain objects become fields.
 */
export function entryFromNestArguments(message: unknown, optionalParams: readonly unknown[], takesStack: boolean): LogEntry {
  const params = [...optionalParams];
  let context: string | undefined;
  let stack: string | undefined;
  const last = params.at(-1);
  if (params.length > 0 && typeof last === 'string' && !(takesStack && params.length === 1 && isStack(last))) {
    context = last;
    params.pop();
  }
  if (takesStack && params.length > 0) {
    const trailing = params.at(-1);
    if (trailing === undefined || typeof trailing === 'string') {
      stack = trailing;
      params.pop();
    }
  }

  let err: unknown;
  let msg: string | undefined;
  let fields: Record<string, unknown> | undefined;
  const leftovers: unknown[] = [];
  if (message instanceof Error) {
    err = message;
    msg = message.message;
  } else if (isPlainObject(message)) {
    fields = { ...message };
  } else if (message !== undefined) {
    msg = typeof message === 'string' ? message : String(message);
  }
  for (const param of params) {
    if (param instanceof Error && err === undefined) err = param;
    else if (isPlainObject(param)) fields = { ...fields, ...param };
    else if (param !== undefined) leftovers.push(param);
  }
  if (leftovers.length > 0) fields = { ...fields, params: leftovers };
  if (err === undefined && stack !== undefined) err = { stack };
  return { msg, context, err, fields };
}
