import { apiErrorOf } from './api-error';

/** The API, on the console's own origin (CORS is not involved). */
export const API_BASE = '/api/v1';
/** A JSON request that has not finished by then is given up (the gateway's own route deadlines are shorter). */
const REQUEST_TIMEOUT_MS = 30_000;
/** A stream whose headers have not arrived by then is given up (chat waits up to the run route deadline, 60 s). */
const STREAM_HEADERS_TIMEOUT_MS = 75_000;

export interface RequestOptions {
  method?: string;
  /** Sent as JSON with its content type. */
  json?: unknown;
  /** Sent as it is (a file upload). */
  body?: BodyInit;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Instead of REQUEST_TIMEOUT_MS (a large file's upload or download). */
  timeoutMs?: number;
}

/** Encodes each interpolated value as one path segment: an id or name can never add a segment or a query. */
export function path(strings: TemplateStringsArray, ...values: (string | number)[]): string {
  return strings.reduce((joined, part, index) => joined + part + (index < values.length ? encodeURIComponent(String(values[index])) : ''), '');
}

/** A workspace-relative file path as URL segments, each encoded. */
export function encodedFilePath(relative: string): string {
  return relative
    .split('/')
    .filter((segment) => segment !== '')
    .map(encodeURIComponent)
    .join('/');
}

/**
 * Every call the console makes: the signed-in credential as a bearer token (never a cookie, never in a URL), no
 * referrer, no cache; a refusal is thrown as an ApiError with the envelope's message.
 */
export class ApiClient {
  constructor(private readonly credential: string) {}

  /** A request answered whole (JSON, a file); given up after REQUEST_TIMEOUT_MS. */
  async send(target: string, options: RequestOptions = {}): Promise<Response> {
    const timeout = AbortSignal.timeout(options.timeoutMs ?? REQUEST_TIMEOUT_MS);
    return this.fetch(target, options, options.signal ? AbortSignal.any([options.signal, timeout]) : timeout);
  }

  async json<T>(target: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.send(target, options);
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }

  /**
   * A request whose answer may be an event stream: only the wait for its headers is bounded; the body is read for as
   * long as the caller's signal allows (the reader bounds silence, see readEventStream).
   */
  async stream(target: string, options: RequestOptions = {}): Promise<Response> {
    const headersWait = new AbortController();
    const timer = setTimeout(() => headersWait.abort(new DOMException('no answer', 'TimeoutError')), STREAM_HEADERS_TIMEOUT_MS);
    try {
      return await this.fetch(target, options, options.signal ? AbortSignal.any([options.signal, headersWait.signal]) : headersWait.signal);
    } finally {
      clearTimeout(timer);
    }
  }

  private async fetch(target: string, options: RequestOptions, signal: AbortSignal): Promise<Response> {
    const headers = new Headers(options.headers);
    headers.set('authorization', `Bearer ${this.credential}`);
    let body = options.body;
    if (options.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(options.json);
    }
    const response = await fetch(`${API_BASE}${target}`, {
      method: options.method ?? (body === undefined ? 'GET' : 'POST'),
      headers,
      body,
      signal,
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    });
    if (!response.ok) throw await apiErrorOf(response);
    return response;
  }
}
