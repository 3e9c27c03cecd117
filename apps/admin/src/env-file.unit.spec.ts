import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { environmentWithEnvFile } from './env-file';

describe('.env under the environment (npm start and npm run admin)', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'env-file-spec-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is the environment alone when there is no .env', () => {
    const env = { NATS_PREFIX: 'a' };
    expect(environmentWithEnvFile(env, dir)).toEqual({ env, file: null });
  });

  it('fills what the environment leaves unset or empty, and never overrides it', async () => {
    await writeFile(
      join(dir, '.env'),
      ['# local settings', 'DATABASE_URL=postgres://postgres@127.0.0.1:5432/mine', 'NATS_PREFIX=from_file', 'export DATA_DIR="/srv/my data"', 'LOG_LEVEL=debug', ''].join('\n'),
    );
    const { env, file } = environmentWithEnvFile({ NATS_PREFIX: 'from_environment', LOG_LEVEL: '', HOME: '/home/x' }, dir);
    expect(file).toBe(join(dir, '.env'));
    expect(env).toEqual({
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/mine',
      NATS_PREFIX: 'from_environment',
      DATA_DIR: '/srv/my data',
      LOG_LEVEL: 'debug',
      HOME: '/home/x',
    });
  });

  it('says which file it could not read', async () => {
    await mkdir(join(dir, '.env'));
    expect(() => environmentWithEnvFile({}, dir)).toThrow(`${join(dir, '.env')} cannot be read (EISDIR)`);
  });
});
