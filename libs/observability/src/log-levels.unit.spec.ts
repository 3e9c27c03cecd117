import { logLevelForNest, nestLevelsFor } from './log-levels';

describe('nestLevelsFor', () => {
  it('lets through the level and everything more severe, in Nest names', () => {
    expect(nestLevelsFor('info')).toEqual(['fatal', 'error', 'warn', 'log']);
    expect(nestLevelsFor('debug')).toEqual(['fatal', 'error', 'warn', 'log', 'debug']);
    expect(nestLevelsFor('trace')).toEqual(['fatal', 'error', 'warn', 'log', 'debug', 'verbose']);
    expect(nestLevelsFor('error')).toEqual(['fatal', 'error']);
    expect(nestLevelsFor('silent')).toEqual([]);
  });
});

describe('logLevelForNest', () => {
  it('takes the least severe level of a Nest list as the threshold', () => {
    expect(logLevelForNest(['error', 'warn'])).toBe('warn');
    expect(logLevelForNest(['fatal', 'error', 'warn', 'log', 'debug'])).toBe('debug');
    expect(logLevelForNest(['verbose'])).toBe('trace');
    expect(logLevelForNest([])).toBe('silent');
  });

  it('round-trips every LOG_LEVEL', () => {
    for (const level of ['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const) {
      expect(logLevelForNest(nestLevelsFor(level))).toBe(level);
    }
  });
});
