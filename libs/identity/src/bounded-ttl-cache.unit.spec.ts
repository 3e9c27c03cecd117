import { BoundedTtlCache } from './bounded-ttl-cache';

describe('BoundedTtlCache', () => {
  let now: number;
  const clock = () => now;

  beforeEach(() => {
    now = 1000;
  });

  it('returns live entries, including cached nulls, and forgets expired ones', () => {
    const cache = new BoundedTtlCache<string | null>(10, clock);
    cache.set('a', 'A', 1500);
    cache.set('missing', null, 1500);
    expect(cache.get('a')).toEqual({ value: 'A' });
    expect(cache.get('missing')).toEqual({ value: null });
    expect(cache.get('other')).toBeUndefined();
    now = 1500;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(1);
  });

  it('evicts the least recently used entry beyond its bound', () => {
    const cache = new BoundedTtlCache<number>(3, clock);
    cache.set('a', 1, 9999);
    cache.set('b', 2, 9999);
    cache.set('c', 3, 9999);
    cache.get('a');
    cache.set('d', 4, 9999);
    expect(cache.size).toBe(3);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toEqual({ value: 1 });
    expect(cache.get('d')).toEqual({ value: 4 });
  });

  it('stores nothing already expired or when the TTL is zero', () => {
    const cache = new BoundedTtlCache<number>(3, clock);
    cache.set('a', 1, now);
    expect(cache.size).toBe(0);
  });
});
