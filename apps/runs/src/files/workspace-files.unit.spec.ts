import { FILE_LIST_MAX_ENTRIES } from '@interns/contracts';
import { parseListing } from './workspace-files';

const record = (name: string, type: string, size = 1, mtime = '1795734026.9670763130') => `${name}/${type}/${size}/${mtime}\0`;

describe('parseListing', () => {
  it("types find's letters and keeps the order the sandbox sorted", () => {
    const listing = parseListing(Buffer.from(record('a', 'f', 12) + record('b', 'd', 4096) + record('c', 'l', 5) + record('d', 'p', 0) + record('new\nline', 's', 0)));
    expect(listing).toEqual({
      truncated: false,
      data: [
        { name: 'a', type: 'file', size: 12, modified_at: '2026-11-26T23:00:26.967Z' },
        { name: 'b', type: 'directory', size: 4096, modified_at: '2026-11-26T23:00:26.967Z' },
        { name: 'c', type: 'symlink', size: 5, modified_at: '2026-11-26T23:00:26.967Z' },
        { name: 'd', type: 'other', size: 0, modified_at: '2026-11-26T23:00:26.967Z' },
        { name: 'new\nline', type: 'other', size: 0, modified_at: '2026-11-26T23:00:26.967Z' },
      ],
    });
  });

  it('answers at most the page, and says when there was more', () => {
    const many = Array.from({ length: FILE_LIST_MAX_ENTRIES + 1 }, (_, index) => record(`f${String(index).padStart(5, '0')}`, 'f')).join('');
    const listing = parseListing(Buffer.from(many));
    expect([listing.data.length, listing.truncated, listing.data.at(-1)?.name]).toEqual([FILE_LIST_MAX_ENTRIES, true, 'f00999']);
    expect(parseListing(Buffer.from('')).data).toEqual([]);
  });
});
