import { createHash } from 'node:crypto';

/** API keys are stored only as this digest (SHA-256, lowercase hex) of their plaintext. */
export function hashApiKey(plaintext: string): string {
  return createHash('sha256').update(plaintext, 'utf8').digest('hex');
}
