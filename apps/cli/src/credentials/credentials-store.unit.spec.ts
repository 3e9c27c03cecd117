import { mkdtemp, readFile, rm, stat, chmod, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configDirOf, CredentialsStore, normalizeApiUrl } from './credentials-store';

let home: string;

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'interns-credentials-'));
});

afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

describe('configDirOf', () => {
  it('is $XDG_CONFIG_HOME/interns, else ~/.config/interns (a relative XDG_CONFIG_HOME is ignored, as the spec says)', () => {
    expect(configDirOf({ XDG_CONFIG_HOME: '/x/config', HOME: '/home/a' })).toBe('/x/config/interns');
    expect(configDirOf({ HOME: '/home/a' })).toBe('/home/a/.config/interns');
    expect(configDirOf({ XDG_CONFIG_HOME: 'relative', HOME: '/home/a' })).toBe('/home/a/.config/interns');
  });
});

describe('CredentialsStore', () => {
  it('writes the file 0600 in a directory 0700, one entry per API, the last login current', async () => {
    const store = new CredentialsStore({ HOME: home });
    expect(await store.read()).toEqual({ version: 1, current: null, apis: {} });
    await store.save('http://a/api/v1', { kind: 'api_key', key: 'k1', saved_at: 't' });
    await store.save('http://b/api/v1', { kind: 'oauth_token', access_token: 'a.b.c', saved_at: 't' });
    expect((await stat(store.path)).mode & 0o777).toBe(0o600);
    expect((await stat(store.dir)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(await readFile(store.path, 'utf8'))).toEqual({
      version: 1,
      current: 'http://b/api/v1',
      apis: { 'http://a/api/v1': { kind: 'api_key', key: 'k1', saved_at: 't' }, 'http://b/api/v1': { kind: 'oauth_token', access_token: 'a.b.c', saved_at: 't' } },
    });
    expect(await store.remove('http://b/api/v1')).toBe(true);
    expect(await store.remove('http://b/api/v1')).toBe(false);
    expect((await store.read()).current).toBe('http://a/api/v1');
  });

  it('tightens a directory that exists with a wider mode', async () => {
    const store = new CredentialsStore({ HOME: home });
    await mkdir(store.dir, { recursive: true });
    await chmod(store.dir, 0o755);
    await store.save('http://a/api/v1', { kind: 'api_key', key: 'k1', saved_at: 't' });
    expect((await stat(store.dir)).mode & 0o777).toBe(0o700);
  });

  it('refuses a file it did not write, saying which', async () => {
    const store = new CredentialsStore({ HOME: home });
    await store.save('http://a/api/v1', { kind: 'api_key', key: 'k1', saved_at: 't' });
    const { writeFile } = await import('node:fs/promises');
    await writeFile(store.path, '{"something":"else"}');
    await expect(store.read()).rejects.toThrow(store.path);
  });
});

describe('normalizeApiUrl', () => {
  it('drops trailing slashes and refuses what is not an http(s) URL', () => {
    expect(normalizeApiUrl('http://localhost:8080/api/v1/')).toBe('http://localhost:8080/api/v1');
    expect(() => normalizeApiUrl('localhost:8080')).toThrow(/http/);
    expect(() => normalizeApiUrl('ftp://x/api')).toThrow(/http/);
    expect(() => normalizeApiUrl('http://x/api?y=1')).toThrow(/query/);
  });
});
