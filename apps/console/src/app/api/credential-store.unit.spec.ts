import { clearSignedIn, readSignedIn, writeSignedIn } from './credential-store';

/** Storage as the browser's, in memory. */
function memoryStorage(): Storage & { entries: Map<string, string> } {
  const entries = new Map<string, string>();
  return {
    entries,
    get length() {
      return entries.size;
    },
    clear: () => entries.clear(),
    getItem: (key) => entries.get(key) ?? null,
    key: (index) => [...entries.keys()][index] ?? null,
    removeItem: (key) => void entries.delete(key),
    setItem: (key, value) => void entries.set(key, value),
  };
}

describe('the signed-in credential', () => {
  it('is kept in the storage given (the tab session) and gone after sign-out', () => {
    const storage = memoryStorage();
    writeSignedIn({ credential: 'uk_secret', kind: 'workspace' }, storage);
    expect(readSignedIn(storage)).toEqual({ credential: 'uk_secret', kind: 'workspace' });
    clearSignedIn(storage);
    expect(readSignedIn(storage)).toBeNull();
    expect(storage.entries.size).toBe(0);
  });

  it('reads nothing from a damaged entry', () => {
    const storage = memoryStorage();
    storage.setItem('interns.console.session', '{not json');
    expect(readSignedIn(storage)).toBeNull();
    storage.setItem('interns.console.session', JSON.stringify({ kind: 'workspace' }));
    expect(readSignedIn(storage)).toBeNull();
  });
});
