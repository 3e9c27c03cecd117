import { PerKeyBackoff } from './per-key-backoff';

describe('PerKeyBackoff', () => {
  const now = 1_000_000;
  const backoff = () => new PerKeyBackoff({ firstMs: 200, maxMs: 5_000 });

  it('has every key ready before anything happened', () => {
    expect(backoff().isReady('a', now)).toBe(true);
  });

  it('doubles the wait per consecutive failure up to the maximum', () => {
    const schedule = backoff();
    const waits = Array.from({ length: 7 }, () => schedule.failed('a', now));
    expect(waits).toEqual([200, 400, 800, 1_600, 3_200, 5_000, 5_000]);
  });

  it('keeps a failed key waiting until its wait is over', () => {
    const schedule = backoff();
    const wait = schedule.failed('a', now);
    expect(schedule.isReady('a', now)).toBe(false);
    expect(schedule.isReady('a', now + wait - 1)).toBe(false);
    expect(schedule.isReady('a', now + wait)).toBe(true);
  });

  it('backs each key off on its own', () => {
    const schedule = backoff();
    schedule.failed('a', now);
    schedule.failed('a', now);
    expect(schedule.isReady('b', now)).toBe(true);
    expect(schedule.failed('b', now)).toBe(200);
  });

  it('makes a key ready at once after a success, and starts its next failures from the first wait', () => {
    const schedule = backoff();
    schedule.failed('a', now);
    schedule.failed('a', now);
    schedule.succeeded('a', now);
    expect(schedule.isReady('a', now)).toBe(true);
    expect(schedule.failed('a', now)).toBe(200);
  });

  it('defers a key after a success that asks to be tried again later, without counting a failure', () => {
    const schedule = backoff();
    schedule.failed('a', now);
    schedule.succeeded('a', now, 300);
    expect(schedule.isReady('a', now + 299)).toBe(false);
    expect(schedule.isReady('a', now + 300)).toBe(true);
    expect(schedule.failed('a', now)).toBe(200);
  });

  it('forgets the keys left out, and only those', () => {
    const schedule = backoff();
    schedule.failed('a', now);
    schedule.failed('a', now);
    schedule.failed('b', now);
    schedule.forgetAllBut(new Set(['b']));
    expect(schedule.isReady('a', now)).toBe(true);
    expect(schedule.failed('a', now)).toBe(200);
    expect(schedule.isReady('b', now)).toBe(false);
    expect(schedule.failed('b', now)).toBe(400);
  });
});
