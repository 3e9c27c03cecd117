/**
 * The console's static files at `/console/` (interface section 23) on an in-process gateway: the files as built,
 * the SPA fallback for client routes, caching (hashed assets for good, index.html revalidated), the security headers
 * on every answer, no path outside the build, and a gateway without a build answering 404 in the envelope.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGatewayHarness, type GatewayHarness } from '../testing/gateway.harness';
import { CONSOLE_SECURITY_HEADERS } from './console-routes';

const INDEX_HTML = '<!doctype html><html><head><script type="module" src="/console/assets/index-abc123.js"></script></head></html>';
const ASSET_JS = 'console.log("console");';

let built: GatewayHarness;
let unbuilt: GatewayHarness;
let buildDir: string;

beforeAll(async () => {
  buildDir = await mkdtemp(join(tmpdir(), 'console-build-'));
  await mkdir(join(buildDir, 'assets'));
  await writeFile(join(buildDir, 'index.html'), INDEX_HTML);
  await writeFile(join(buildDir, 'assets', 'index-abc123.js'), ASSET_JS);
  await writeFile(join(buildDir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  await writeFile(join(buildDir, '.hidden'), 'not served');
  [built, unbuilt] = await Promise.all([
    startGatewayHarness({ name: 'console-built', routeDeadlineMs: 2000, env: { CONSOLE_DIR: buildDir } }),
    startGatewayHarness({ name: 'console-unbuilt', routeDeadlineMs: 2000, env: { CONSOLE_DIR: join(buildDir, 'missing') } }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([built?.stop(), unbuilt?.stop()]);
  await rm(buildDir, { recursive: true, force: true });
});

function get(harness: GatewayHarness, path: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`http://127.0.0.1:${harness.gateway.port}${path}`, { headers, redirect: 'manual' });
}

function expectSecurityHeaders(response: Response): void {
  for (const [name, value] of Object.entries(CONSOLE_SECURITY_HEADERS)) expect(response.headers.get(name)).toBe(value);
}

describe('a built console', () => {
  it('serves index.html at /console/, revalidated on every load, with the security headers and no credential', async () => {
    const response = await get(built, '/console/');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expectSecurityHeaders(response);
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(await response.text()).toBe(INDEX_HTML);
  });

  it('redirects /console to /console/', async () => {
    const response = await get(built, '/console');
    expect(response.status).toBe(308);
    expect(response.headers.get('location')).toBe('/console/');
  });

  it('answers 304 to a request that holds the current version', async () => {
    const first = await get(built, '/console/');
    const again = await get(built, '/console/', { 'if-none-match': first.headers.get('etag') ?? '' });
    expect(again.status).toBe(304);
    expectSecurityHeaders(again);
  });

  it('serves a hashed asset for good, and other files revalidated', async () => {
    const asset = await get(built, '/console/assets/index-abc123.js');
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toMatch(/javascript/);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expectSecurityHeaders(asset);
    expect(await asset.text()).toBe(ASSET_JS);
    const icon = await get(built, '/console/favicon.svg');
    expect(icon.status).toBe(200);
    expect(icon.headers.get('cache-control')).toBe('no-cache');
  });

  it('answers index.html for a client route (a reload on any page), whatever its query', async () => {
    for (const path of ['/console/interns', '/console/interns/0b7c/chat?x=1', '/console/analytics']) {
      const response = await get(built, path);
      expect(response.status).toBe(200);
      expect(await response.text()).toBe(INDEX_HTML);
    }
  });

  it('answers a missing file, a dotfile or a path out of the build 404 in the envelope', async () => {
    for (const path of ['/console/assets/gone-123.js', '/console/.hidden', '/console/../package.json', '/console/%2e%2e/%2e%2e/package.json', '/console/robots.txt']) {
      const response = await get(built, path);
      expect({ path, status: response.status }).toEqual({ path, status: 404 });
      const body = (await response.json()) as { error: { message: string } };
      expect(body.error).toMatchObject({ code: 404, metadata: { reason: 'not_found', retryable: false } });
    }
  });

  it('leaves the API as it is: no console headers there', async () => {
    const response = await get(built, '/api/v1/interns');
    expect(response.status).toBe(401);
    expect(response.headers.get('content-security-policy')).toBeNull();
  });
});

describe('a gateway without a console build', () => {
  it('answers 404 in the envelope saying the console is not built, and keeps serving the API', async () => {
    const response = await get(unbuilt, '/console/');
    expect(response.status).toBe(404);
    expectSecurityHeaders(response);
    const body = (await response.json()) as { error: { message: string } };
    expect(body.error).toMatchObject({ code: 404, metadata: { reason: 'not_found', retryable: false } });
    expect(body.error.message).toMatch(/not built/);
    expect((await get(unbuilt, '/health/live')).status).toBe(200);
  });
});
