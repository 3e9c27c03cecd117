import { SecretPlaceholders } from './secret-placeholders';

const INTERN = '0b3c9f8e-1d2a-4c5b-8e7f-6a5b4c3d2e1f';
const OTHER = '7d6c5b4a-3e2f-4a1b-9c8d-7e6f5a4b3c2d';

describe('SecretPlaceholders', () => {
  const placeholders = new SecretPlaceholders('a'.repeat(64));

  it('is vault:<name>:<32 hex>, stable for one intern and name', () => {
    const placeholder = placeholders.of(INTERN, 'github_token');
    expect(placeholder).toMatch(/^vault:github_token:[0-9a-f]{32}$/);
    expect(placeholders.of(INTERN, 'github_token')).toBe(placeholder);
  });

  it('differs between interns, names and installs (keys)', () => {
    const placeholder = placeholders.of(INTERN, 'github_token');
    expect(placeholders.of(OTHER, 'github_token')).not.toBe(placeholder);
    expect(placeholders.of(INTERN, 'npm_token')).not.toBe(placeholders.of(INTERN, 'github_token').replace('github_token', 'npm_token'));
    expect(new SecretPlaceholders('b'.repeat(64)).of(INTERN, 'github_token')).not.toBe(placeholder);
  });

  it("names each variable after its secret, uppercased, and never takes a name the sandbox sets itself", () => {
    expect(placeholders.environment(INTERN, ['github_token', 'path', 'https_proxy', 'ssl_cert_file', 'home', 'ld_preload'])).toEqual({
      GITHUB_TOKEN: placeholders.of(INTERN, 'github_token'),
    });
  });
});
