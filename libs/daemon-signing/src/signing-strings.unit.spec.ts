import { sha256Hex, signingStringV1, signingStringV2 } from './signing-strings';

describe('signing strings', () => {
  it('are the lines of CONTRACT section 8, in order', () => {
    const common = { internId: 'i-1', timestamp: '1700000000', user: 'alice', bodySha256: 'ab'.repeat(32) };
    expect(signingStringV1(common)).toBe(`v1\ni-1\n1700000000\nalice\n${'ab'.repeat(32)}`);
    expect(signingStringV2({ ...common, nonce: 'n0nce', method: 'POST', path: '/x?y=1' })).toBe(
      `v2\ni-1\n1700000000\nn0nce\nalice\nPOST\n/x?y=1\n${'ab'.repeat(32)}`,
    );
  });

  it('hash bodies as lowercase hex SHA-256', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex(Buffer.from('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
