import { ModelProviderError } from '../model-provider';

/** Provider error texts are shown to callers; a long HTML error page is cut. */
const MAX_PROVIDER_MESSAGE_CHARS = 500;

/** Removes the API key from a text shown to callers (providers sometimes echo a partial key). */
export type Redact = (text: string) => string;

/** A non-2xx answer as the error the run reports: `configuration_error` when retrying cannot help. */
export function statusError(status: number, body: string, model: string, redact: Redact): ModelProviderError {
  const detail = redact(providerMessage(body) ?? '');
  const suffix = detail === '' ? '' : `: ${detail}`;
  const error = (reason: ModelProviderError['reason'], message: string) =>
    new ModelProviderError(reason, `${message} (HTTP ${status})`);
  if (status === 401 || status === 403) {
    return error('configuration_error', 'the model provider refused the configured API key');
  }
  if (status === 404) {
    const what = `no model "${model}" or no chat completions endpoint`;
    return error('configuration_error', `the model provider knows ${what}`);
  }
  if (status === 429) return error('internal_error', `the model provider is rate limiting requests${suffix}`);
  // Other client errors will not go away by retrying the same request; a request timeout (408) may.
  if (status >= 400 && status < 500 && status !== 408) {
    return error('configuration_error', `the model provider rejected the request${suffix}`);
  }
  return error('internal_error', `the model provider failed${suffix}`);
}

/** An `{error}` chunk in the middle of a stream. */
export function midStreamError(message: unknown, redact: Redact): ModelProviderError {
  const detail = typeof message === 'string' ? `: ${truncate(message)}` : '';
  return new ModelProviderError('internal_error', redact(`the model provider failed mid-stream${detail}`));
}

/** fetch reports network failures as "fetch failed" with the actual reason as the cause. */
export function describeFetchFailure(error: unknown): string {
  // Duck-typed: errors raised by Node's own fetch may come from another realm than this module's `Error`.
  const { message, cause } = (error ?? {}) as { message?: unknown; cause?: { message?: unknown; code?: unknown } };
  const text = typeof message === 'string' ? message : String(error);
  const reason = typeof cause?.code === 'string' ? cause.code : cause?.message;
  return typeof reason === 'string' ? `${text} (${reason})` : text;
}

/** A JSON object, or null for anything else (invalid JSON, arrays, scalars). */
export function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    const isObject = typeof value === 'object' && value !== null && !Array.isArray(value);
    return isObject ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** `{error:{message}}` as OpenAI and most compatible providers send it, else a short plain-text body. */
function providerMessage(body: string): string | null {
  const parsed = parseObject(body) as { error?: { message?: unknown } | string | null; message?: unknown } | null;
  if (parsed === null) {
    const text = body.trim();
    return text === '' || text.startsWith('<') ? null : truncate(text);
  }
  const message = typeof parsed.error === 'string' ? parsed.error : (parsed.error?.message ?? parsed.message);
  return typeof message === 'string' ? truncate(message) : null;
}

function truncate(text: string): string {
  return text.length <= MAX_PROVIDER_MESSAGE_CHARS ? text : `${text.slice(0, MAX_PROVIDER_MESSAGE_CHARS)}…`;
}
