import { DomainError } from './errors';
import { parseDaemonSignBody, ROUTE_PATH_MAX_CHARS, SIGNABLE_METHODS } from './daemon';

const SHA = '0123456789abcdef'.repeat(4);

function refusalOf(value: unknown): string {
  try {
    parseDaemonSignBody(value);
  } catch (error) {
    if (error instanceof DomainError && error.reason === 'invalid_body') return error.message;
    throw error;
  }
  throw new Error('accepted');
}

describe('parseDaemonSignBody', () => {
  it('accepts a body hash alone, or with a POST route', () => {
    expect(parseDaemonSignBody({ bodySha256: SHA })).toEqual({ bodySha256: SHA });
    for (const method of SIGNABLE_METHODS) {
      expect(parseDaemonSignBody({ bodySha256: SHA, route: { method, path: '/a/b?c=%20' } })).toEqual({
        bodySha256: SHA,
        route: { method, path: '/a/b?c=%20' },
      });
    }
    expect(parseDaemonSignBody({ bodySha256: SHA, route: { method: 'POST', path: `/${'x'.repeat(ROUTE_PATH_MAX_CHARS - 1)}` } })).toBeTruthy();
  });

  it('refuses what would be ambiguous in a signing string or is not the documented shape', () => {
    expect(refusalOf({ bodySha256: SHA, route: { method: 'POST', path: `/${'x'.repeat(ROUTE_PATH_MAX_CHARS)}` } })).toBe(
      `route.path: must be at most ${ROUTE_PATH_MAX_CHARS} characters`,
    );
    expect(refusalOf({ bodySha256: SHA, route: { method: 'POST', path: '/a b' } })).toMatch(/^route\.path: /);
    expect(refusalOf({ bodySha256: SHA, route: { method: 'POST', path: '/a\r' } })).toMatch(/^route\.path: /);
    expect(refusalOf({ bodySha256: SHA, route: { method: 'TRACE', path: '/' } })).toBe('route.method: must be "POST"');
    for (const method of ['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'post']) {
      expect(refusalOf({ bodySha256: SHA, route: { method, path: '/hooks/run' } })).toBe('route.method: must be "POST"');
    }
    expect(refusalOf({ bodySha256: ` ${SHA.slice(1)}` })).toBe('bodySha256: must be 64 lowercase hex characters');
    expect(refusalOf({ bodySha256: 42 })).toMatch(/^bodySha256: /);
    expect(refusalOf({ bodySha256: SHA, other: true })).toBe('unknown field: other');
    expect(refusalOf(null)).toBe('body must be a JSON object');
    expect(refusalOf('x')).toBe('body must be a JSON object');
  });
});
