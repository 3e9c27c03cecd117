import { loadConfig } from './config';

describe('loadConfig: KEYS_DIR', () => {
  it('defaults to <DATA_DIR>/keys, beside the workspaces rather than in them', () => {
    expect(loadConfig({}).keysDir).toBe('./.data/keys');
    expect(loadConfig({ DATA_DIR: '/srv/interns/' }).keysDir).toBe('/srv/interns/keys');
  });

  it('may be anywhere else', () => {
    expect(loadConfig({ DATA_DIR: '/data', KEYS_DIR: '/run/interns-keys' }).keysDir).toBe('/run/interns-keys');
  });
});
