import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

const SECRET_PREFIX = 'whsec_';

/** A new endpoint's signing secret: `whsec_` + base64 of 32 random bytes (CONTRACT section 13). */
export function newEndpointSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** The Standard Webhooks headers of one attempt. */
export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * Signs one attempt per the Standard Webhooks specification: `v1,<base64 HMAC-SHA256 over
 * "<id>.<timestamp>.<body>">`, keyed with the base64-decoded secret after `whsec_` (the `standardwebhooks`
 * library does the keying and formatting). The id is the event's, the same on every retry; the timestamp is
 * the attempt's, in whole seconds, and the one the signature covers.
 */
export function signedHeaders(secret: string, eventId: string, body: string, now: Date = new Date()): SignedHeaders {
  const seconds = Math.floor(now.getTime() / 1000);
  const signature = new Webhook(secret).sign(eventId, new Date(seconds * 1000), body);
  return { 'webhook-id': eventId, 'webhook-timestamp': String(seconds), 'webhook-signature': signature };
}
