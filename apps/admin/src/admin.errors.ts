/** A mistake in how the command was called (unknown command, missing flag, unreadable file). */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The one line printed on stderr: the message only, never a stack or a multi-line dump. */
export function errorLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s*\n\s*/g, ' ').trim() || 'unknown error';
}
