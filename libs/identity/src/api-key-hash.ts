import { hash } from 'node:crypto';

/**
 * API keys are stored only as this digest (SHA-256, lowercase hex) of their plaintext. Computed on every
 * authenticated request (the credential cache is keyed by it): the one-shot `hash` spares createHash's objects.
 */
export function hashApiKey(plaintext: string): string {
  return hash('sha256', plaintext, 'hex');
}
