/** Where the CLI may send a device-flow login: HTTPS anywhere, plain HTTP to this machine only. */
import { deviceFlowLogin } from './device-flow';
import { DeviceFlowError } from './device-flow-error';
import { checkEndpoint, parseIssuer } from './issuer-url';

function reasonOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(DeviceFlowError);
    return (error as DeviceFlowError).reason;
  }
  throw new Error('no error');
}

describe('issuer URLs', () => {
  it('takes https anywhere and http only on loopback', () => {
    expect(parseIssuer('https://login.example.com/realms/acme')).toMatchObject({ insecure: false, label: 'https://login.example.com/realms/acme' });
    expect(parseIssuer('https://login.example.com/')).toMatchObject({ insecure: false, label: 'https://login.example.com' });
    for (const local of ['http://localhost:8081', 'http://127.0.0.1:9000/oidc', 'http://[::1]:9000']) {
      expect(parseIssuer(local).insecure).toBe(true);
    }
    for (const remote of ['http://login.example.com', 'http://127.0.0.2', 'http://localhost.example.com', 'http://10.0.0.1:8080', 'ftp://127.0.0.1']) {
      expect(reasonOf(() => parseIssuer(remote))).toBe('invalid_issuer');
    }
  });

  it('refuses what is not an issuer identifier', () => {
    expect(reasonOf(() => parseIssuer('login.example.com'))).toBe('invalid_issuer');
    expect(reasonOf(() => parseIssuer('https://login.example.com/?tenant=a'))).toBe('invalid_issuer');
    expect(reasonOf(() => parseIssuer('https://login.example.com/#a'))).toBe('invalid_issuer');
  });

  it('keeps a loopback issuer from sending the CLI to plain http elsewhere', () => {
    const local = parseIssuer('http://127.0.0.1:9000');
    expect(() => checkEndpoint(local, 'http://127.0.0.1:9000/token', 'token_endpoint')).not.toThrow();
    expect(() => checkEndpoint(local, 'https://login.example.com/token', 'token_endpoint')).not.toThrow();
    expect(reasonOf(() => checkEndpoint(local, 'http://login.example.com/token', 'token_endpoint'))).toBe('invalid_issuer');
    expect(reasonOf(() => checkEndpoint(parseIssuer('https://login.example.com'), 'http://127.0.0.1/token', 'token_endpoint'))).toBe('invalid_issuer');
    expect(reasonOf(() => checkEndpoint(local, undefined, 'token_endpoint'))).toBe('issuer_error');
  });

  it('fails a login at a remote http issuer before any request', async () => {
    const shown: unknown[] = [];
    const login = deviceFlowLogin({ issuer: 'http://login.example.com', onUserCode: (code) => void shown.push(code) });
    await expect(login).rejects.toMatchObject({ reason: 'invalid_issuer', message: expect.stringContaining('must use https') });
    expect(shown).toEqual([]);
  });
});
