/**
 * The one way `interns` talks HTTP to the API: the base URL and bearer credential of a login, a deadline on every
 * request that is not a stream, and every answer outside 2xx turned into an ApiError with the API's envelope.
 * Uses the platform's fetch (undici), so streams come back as web streams.
 */
import { ApiError, CliError, EXIT, isErrorEnvelope } from '../errors';

export interface ApiRequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  /** Sent as JSON with `Content-Type: application/json`. */
  json?: unknown;
  /** A raw body (an upload); give `headers['content-type']` and, when known, `content-length`. */
  body?: ReadableStream<Uint8Array> | Uint8Array;
  headers?: Record<string, string>;
  /**
   * Deadline of the whole request, or with `stream` of its answer's head only (a stream then relies on its
   * idle timeout).
   */
  timeoutMs?: number;
  stream?: boolean;
  signal?: AbortSignal;
}

/** Default deadline of a request: above the API's own route deadlines (10 s lifecycle, 60 s before a chat stream). */
export const REQUEST_TIMEOUT_MS = 75_000;

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly bearer: string,
  ) {}

  url(path: string, query?: ApiRequestOptions['query']): URL {
    const url = new URL(`${this.baseUrl}${path}`);
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
    return url;
  }

  /** Sends a request and answers the response when it is 2xx; otherwise throws the ApiError it carries. */
  async send(method: string, path: string, options: ApiRequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.bearer}`, accept: 'application/json, text/event-stream, */*', ...options.headers };
    let body: string | Uint8Array | ReadableStream<Uint8Array> | undefined;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['content-type'] = 'application/json';
    } else if (options.body !== undefined) {
      body = options.body;
    }
    const timeoutMs = options.timeoutMs ?? REQUEST_TIMEOUT_MS;
    // A stream's deadline covers only the wait for its head: the controller is let go once the head is in.
    const headDeadline = new AbortController();
    const headTimer = options.stream ? setTimeout(() => headDeadline.abort(new DOMException('head deadline', 'TimeoutError')), timeoutMs) : undefined;
    const deadline = options.stream ? headDeadline.signal : AbortSignal.timeout(timeoutMs);
    const url = this.url(path, options.query);
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers,
        body,
        signal: options.signal === undefined ? deadline : AbortSignal.any([options.signal, deadline]),
        // A streamed upload: the request body is sent as it is read.
        ...(options.body instanceof ReadableStream ? { duplex: 'half' } : {}),
      } as RequestInit);
    } catch (error) {
      throw requestFailure(error, url, timeoutMs, options.signal);
    } finally {
      clearTimeout(headTimer);
    }
    if (response.ok) return response;
    throw await apiErrorOf(response);
  }

  /** A JSON answer (a 204 answers null). */
  async json<T>(method: string, path: string, options: ApiRequestOptions = {}): Promise<T> {
    const response = await this.send(method, path, options);
    const text = await response.text();
    return (text === '' ? null : JSON.parse(text)) as T;
  }

  get<T>(path: string, query?: ApiRequestOptions['query']): Promise<T> {
    return this.json<T>('GET', path, { query });
  }
}

/** The ApiError of a non-2xx response: its envelope when the body is one, else its status and text. */
export async function apiErrorOf(response: Response): Promise<ApiError> {
  const text = await response.text().catch(() => '');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (isErrorEnvelope(parsed)) return new ApiError(response.status, parsed, parsed.error.message);
  const excerpt = text.trim().slice(0, 200);
  return new ApiError(response.status, null, `HTTP ${response.status}${excerpt === '' ? '' : `: ${excerpt}`}`);
}

/** What a fetch that threw means for the user: interrupted, timed out, or the API unreachable. */
function requestFailure(error: unknown, url: URL, timeoutMs: number, signal: AbortSignal | undefined): Error {
  if (signal?.aborted) return new CliError('interrupted', EXIT.interrupted, 'interrupted');
  const name = (error as Error)?.name;
  if (name === 'TimeoutError' || (error as { cause?: Error })?.cause?.name === 'TimeoutError') return new CliError(`${url.origin} did not answer within ${timeoutMs / 1000} s`, EXIT.unreachable, 'unreachable');
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  const why = cause?.code ?? cause?.message ?? (error as Error)?.message ?? String(error);
  return new CliError(`cannot reach the API at ${url.origin}: ${why}`, EXIT.unreachable, 'unreachable');
}

/** A response's body, which a 2xx stream or download must have. */
export function bodyOf(response: Response): ReadableStream<Uint8Array> {
  if (response.body === null) throw new CliError(`the API answered ${response.status} without a body`, EXIT.failure, 'bad_answer');
  return response.body;
}
