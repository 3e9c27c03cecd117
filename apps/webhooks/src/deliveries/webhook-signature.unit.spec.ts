import { createHmac } from 'node:crypto';
import { newEndpointSecret, signedHeaders } from './webhook-signature';

/** The Standard Webhooks signature computed independently, with node:crypto only. */
function expectedSignature(secret: string, id: string, timestamp: string, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

describe('webhook signatures', () => {
  it('issues secrets of 32 random bytes, base64 after whsec_', () => {
    const secret = newEndpointSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(newEndpointSecret()).not.toBe(secret);
  });

  it('signs "<id>.<timestamp>.<body>" with the decoded secret, stamping the whole second it signed', () => {
    const secret = newEndpointSecret();
    const body = JSON.stringify({ id: 'e-1', type: 'run.completed', data: { text: 'héllo' } });
    const headers = signedHeaders(secret, 'e-1', body, new Date(1_700_000_000_987));
    expect(headers['webhook-id']).toBe('e-1');
    expect(headers['webhook-timestamp']).toBe('1700000000');
    expect(headers['webhook-signature']).toBe(expectedSignature(secret, 'e-1', '1700000000', body));
  });
});
