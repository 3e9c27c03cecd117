import { createHash } from 'node:crypto';

/** Namespace of integration event ids (a fixed random UUID): names hashed under it never meet other v5 ids. */
const NAMESPACE = Buffer.from('3f6c2a8e5b0d4e7a9c1f62b4d8e0a5c7', 'hex');

/**
 * The id of the integration event of `type` that the stored event `sourceEventId` stands for: a name-based
 * UUID (version 5, RFC 9562), so a relay that publishes the event again after a crash gives it the same id
 * (`Nats-Msg-Id` for JetStream's dedupe, `id` for consumers'), and two events from one source differ.
 */
export function integrationEventId(sourceEventId: string, type: string): string {
  const hash = createHash('sha1').update(NAMESPACE).update(`${sourceEventId}/${type}`).digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
