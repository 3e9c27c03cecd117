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

describe('loadConfig: EVENTS_REPLAY_RETENTION_MS', () => {
  it('defaults to an hour, with a 64 MiB replay buffer and 8 event streams per caller', () => {
    const config = loadConfig({});
    expect([config.eventsReplayRetentionMs, config.eventsReplayMaxBytes, config.eventStreamsPerCaller]).toEqual([3600000, 67108864, 8]);
  });

  it('takes a retention up to what the integration event streams keep (JETSTREAM_MAX_AGE_MS)', () => {
    expect(loadConfig({ EVENTS_REPLAY_RETENTION_MS: '604800000' }).eventsReplayRetentionMs).toBe(604800000);
    expect(loadConfig({ EVENTS_REPLAY_RETENTION_MS: '5000', JETSTREAM_MAX_AGE_MS: '5000' }).eventsReplayRetentionMs).toBe(5000);
  });

  it('refuses a retention longer than the streams keep their events, and one that is not a positive integer', () => {
    expect(() => loadConfig({ EVENTS_REPLAY_RETENTION_MS: '604800001' })).toThrow(/EVENTS_REPLAY_RETENTION_MS .* JETSTREAM_MAX_AGE_MS/);
    expect(() => loadConfig({ EVENTS_REPLAY_RETENTION_MS: '7200000', JETSTREAM_MAX_AGE_MS: '3600000' })).toThrow(/JETSTREAM_MAX_AGE_MS/);
    for (const value of ['0', '-1', '1h']) expect(() => loadConfig({ EVENTS_REPLAY_RETENTION_MS: value })).toThrow(/EVENTS_REPLAY_RETENTION_MS/);
  });
});
