import { TtlCache } from './ttl-cache';

describe('TtlCache', () => {
  let now = 1_000;
  const clock = () => now;

  it('forgets an entry once its TTL has passed', () => {
    const cache = new TtlCache<string, number>(2_000, 10, clock);
    cache.set('a', 1);
    now += 1_999;
    expect(cache.get('a')).toBe(1);
    now += 1;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('keeps at most maxEntries, dropping the oldest first', () => {
    const cache = new TtlCache<string, number>(60_000, 2, clock);
    cache.set('a', 1);
    cache.set('b', 2);
    cache.set('c', 3);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([undefined, 2, 3]);
  });

  it('drops what deleteWhere matches, and caches nothing with a TTL of 0', () => {
    const cache = new TtlCache<string, { intern: string }>(60_000, 10, clock);
    cache.set('t1', { intern: 'x' });
    cache.set('t2', { intern: 'y' });
    cache.deleteWhere((value) => value.intern === 'x');
    expect([cache.get('t1'), cache.get('t2')]).toEqual([undefined, { intern: 'y' }]);
    const off = new TtlCache<string, number>(0, 10, clock);
    off.set('a', 1);
    expect(off.get('a')).toBeUndefined();
  });
});
