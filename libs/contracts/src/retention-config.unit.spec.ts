import { DEFAULT_TRANSCRIPT_RETENTION_MS, loadConfig, transcriptSweepIntervalMs } from './config';

describe('loadConfig: TRANSCRIPT_RETENTION_MS', () => {
  it('defaults to 30 days (CONTRACT section 22)', () => {
    expect(DEFAULT_TRANSCRIPT_RETENTION_MS).toBe(30 * 24 * 60 * 60 * 1000);
    expect(loadConfig({}).transcriptRetentionMs).toBe(2592000000);
  });

  it('takes a positive number of milliseconds', () => {
    expect(loadConfig({ TRANSCRIPT_RETENTION_MS: '604800000' }).transcriptRetentionMs).toBe(604800000);
  });

  it.each(['0', '-1', '1.5', '30d', 'forever'])('refuses %s', (value) => {
    expect(() => loadConfig({ TRANSCRIPT_RETENTION_MS: value })).toThrow(/TRANSCRIPT_RETENTION_MS/);
  });
});

describe('transcriptSweepIntervalMs', () => {
  it('looks a tenth of the retention apart, at most a minute and at least 100 ms', () => {
    expect(transcriptSweepIntervalMs(2592000000)).toBe(60_000);
    expect(transcriptSweepIntervalMs(300_000)).toBe(30_000);
    expect(transcriptSweepIntervalMs(5_000)).toBe(500);
    expect(transcriptSweepIntervalMs(1)).toBe(100);
  });
});
