import { ApiError } from './api-error';
import { identify } from './identify';

/** fetch as the browser's, answering each path from `answers` and recording what was asked. */
function stubFetch(answers: Record<string, { status: number; body: unknown }>): { asked: { url: string; authorization: string | null }[]; restore(): void } {
  const original = globalThis.fetch;
  const asked: { url: string; authorization: string | null }[] = [];
  globalThis.fetch = (async (url: string, init: RequestInit) => {
    asked.push({ url, authorization: new Headers(init.headers).get('authorization') });
    const answer = answers[url] ?? { status: 404, body: { error: { code: 404, message: 'not found', metadata: { reason: 'not_found', retryable: false } } } };
    return new Response(JSON.stringify(answer.body), { status: answer.status, headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
  return { asked, restore: () => (globalThis.fetch = original) };
}

const unauthorized = { status: 401, body: { error: { code: 401, message: 'invalid or missing API key' } } };

describe('signing in', () => {
  it('checks a workspace credential with the intern list only, as a bearer token', async () => {
    const stub = stubFetch({ '/api/v1/interns?limit=1': { status: 200, body: { data: [], has_more: false } } });
    try {
      await expect(identify('uk_a', 'workspace', null)).resolves.toEqual({ credential: 'uk_a', kind: 'workspace' });
      expect(stub.asked).toEqual([{ url: '/api/v1/interns?limit=1', authorization: 'Bearer uk_a' }]);
    } finally {
      stub.restore();
    }
  });

  it('checks a management key with the analytics catalogue only', async () => {
    const stub = stubFetch({ '/api/v1/analytics/meta': { status: 200, body: { data: {} } } });
    try {
      await expect(identify('mk_a', 'management', null)).resolves.toEqual({ credential: 'mk_a', kind: 'management' });
      expect(stub.asked.map((call) => call.url)).toEqual(['/api/v1/analytics/meta']);
    } finally {
      stub.restore();
    }
  });

  it("checks an intern key with its intern, the id encoded as one path segment", async () => {
    const stub = stubFetch({ '/api/v1/interns/a%2F..%2Fb': { status: 200, body: {} } });
    try {
      await expect(identify('ik_a', 'intern', 'a/../b')).resolves.toEqual({ credential: 'ik_a', kind: 'intern', internId: 'a/../b' });
    } finally {
      stub.restore();
    }
  });

  it("refuses with the envelope's message and a hint at the likelier use", async () => {
    const stub = stubFetch({ '/api/v1/interns?limit=1': unauthorized });
    try {
      const refusal = identify('mk_a', 'workspace', null);
      await expect(refusal).rejects.toBeInstanceOf(ApiError);
      await expect(refusal).rejects.toThrow('invalid or missing API key (a management key? choose Analytics)');
    } finally {
      stub.restore();
    }
    // Nothing answered: the intern list is 404 for an intern key.
    const internKey = stubFetch({});
    try {
      await expect(identify('ik_a', 'workspace', null)).rejects.toThrow(/an intern key\? choose One intern/);
    } finally {
      internKey.restore();
    }
  });
});
