/** A refusal of the API, carrying the envelope's message (interface section 2; analytics has no metadata). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

interface Envelope {
  error?: { code?: unknown; message?: unknown; metadata?: { reason?: unknown } };
}

/** The ApiError for a response that is not ok: the envelope's message when there is one, else the status. */
export async function apiErrorOf(response: Response): Promise<ApiError> {
  const text = await response.text().catch(() => '');
  let envelope: Envelope | null;
  try {
    envelope = JSON.parse(text) as Envelope;
  } catch {
    envelope = null;
  }
  const message = typeof envelope?.error?.message === 'string' ? envelope.error.message : `the server answered ${response.status}`;
  const reason = typeof envelope?.error?.metadata?.reason === 'string' ? envelope.error.metadata.reason : null;
  return new ApiError(response.status, message, reason);
}

/** What to show for any failure: the envelope's message, or a network failure said plainly. */
export function messageOf(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof DOMException && error.name === 'TimeoutError') return 'the server did not answer in time';
  if (error instanceof TypeError) return 'the server could not be reached';
  return error instanceof Error ? error.message : String(error);
}
