import type { Agent } from 'undici';
import { type AddressGuard, pinnedLookup, UnsafeTargetError } from '../address-guard/address-guard';
import { signedHeaders } from './webhook-signature';

/** What one attempt is sent with. */
export interface DeliveryAttempt {
  eventId: string;
  /** The exact JSON text that is signed and sent. */
  payload: string;
  url: string;
  secret: string;
}

/**
 * How an attempt ended. `delivered`: a 2xx within the timeout. Otherwise why not, with the status when the
 * receiver answered: `http_error` (not 2xx), `timeout`, `refused_address` (the SSRF guard, e.g. after DNS
 * rebinding), `network_error` (DNS, connection, TLS).
 */
export type AttemptResult =
  | { outcome: 'delivered'; statusCode: number }
  | { outcome: 'http_error'; statusCode: number; error: string }
  | { outcome: 'timeout' | 'refused_address' | 'network_error' | 'secret_unavailable'; statusCode: null; error: string };

/** Bytes of an answer's body read (and dropped) before the connection is let go; receivers should answer briefly. */
const MAX_ANSWER_BYTES = 64 * 1024;
const USER_AGENT = 'interns-webhooks/1';

/**
 * Sends one attempt: checks the URL again (scheme and every resolved address, CONTRACT section 13), then POSTs
 * to the address that check pinned, with the Standard Webhooks headers. The whole attempt (resolution,
 * connection, TLS, the answer's status and body) must fit in `timeoutMs`. No redirects are followed: a 3xx is
 * an answer that is not 2xx.
 */
export class DeliverySender {
  constructor(
    private readonly guard: AddressGuard,
    private readonly timeoutMs: number,
  ) {}

  async send(attempt: DeliveryAttempt): Promise<AttemptResult> {
    // undici is loaded at the first attempt: about 15 MiB of RSS (its heap and its WebAssembly HTTP parser) that a
    // webhooks process with nothing to deliver need not hold. Before the attempt's clock starts: loading the client
    // is not the receiver's time. A failed load is a failed attempt, retried as any other (send never throws).
    let undici: typeof import('undici');
    try {
      undici = await import('undici');
    } catch (error) {
      return { outcome: 'network_error', statusCode: null, error: describeNetworkError(error) };
    }
    const signal = AbortSignal.timeout(this.timeoutMs);
    let agent: Agent | null = null;
    try {
      const target = await abortable(this.guard.check(attempt.url), signal);
      // One agent per attempt: its only connection goes to the pinned address and is closed afterwards.
      agent = new undici.Agent({ connect: { lookup: pinnedLookup(target), timeout: this.timeoutMs }, pipelining: 0 });
      const headers = {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        ...signedHeaders(attempt.secret, attempt.eventId, attempt.payload),
      };
      const answer = await undici.request(target.url, { method: 'POST', headers, body: attempt.payload, dispatcher: agent, signal });
      await answer.body.dump({ limit: MAX_ANSWER_BYTES }).catch(() => undefined);
      if (answer.statusCode >= 200 && answer.statusCode < 300) return { outcome: 'delivered', statusCode: answer.statusCode };
      return { outcome: 'http_error', statusCode: answer.statusCode, error: `answered HTTP ${answer.statusCode}` };
    } catch (error) {
      return failureOf(error, signal, this.timeoutMs);
    } finally {
      agent?.destroy().catch(() => undefined);
    }
  }
}

function failureOf(error: unknown, signal: AbortSignal, timeoutMs: number): AttemptResult {
  if (error instanceof UnsafeTargetError) return { outcome: 'refused_address', statusCode: null, error: error.message };
  if (signal.aborted || (error as { code?: string }).code === 'UND_ERR_CONNECT_TIMEOUT') {
    return { outcome: 'timeout', statusCode: null, error: `no answer within ${timeoutMs} ms` };
  }
  return { outcome: 'network_error', statusCode: null, error: describeNetworkError(error) };
}

/** `ECONNREFUSED: connect ECONNREFUSED 1.2.3.4:443`, short and without the stack. */
function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause : null;
  const code = (cause as NodeJS.ErrnoException | null)?.code ?? (error as NodeJS.ErrnoException).code;
  const message = cause?.message ?? error.message;
  return (code && !message.includes(code) ? `${code}: ${message}` : message).slice(0, 500);
}

/** `promise`, or a rejection as soon as `signal` aborts (a DNS lookup cannot be cancelled, only left behind). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
