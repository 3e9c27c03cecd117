import { filesPath, remotePathOf } from './cp.command';

describe('cp arguments', () => {
  it('reads <intern>:<path> for a name or an id, and anything else as local', () => {
    expect(remotePathOf('ada:dir/a.txt')).toEqual({ intern: 'ada', path: 'dir/a.txt' });
    expect(remotePathOf('ada:')).toEqual({ intern: 'ada', path: '' });
    expect(remotePathOf('ada:/abs')).toEqual({ intern: 'ada', path: 'abs' });
    expect(remotePathOf('0b6f8a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b:x')).toEqual({ intern: '0b6f8a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b', path: 'x' });
    expect(remotePathOf('./ada:x')).toBeNull();
    expect(remotePathOf('/tmp/a:b')).toBeNull();
    expect(remotePathOf('a.txt')).toBeNull();
    expect(remotePathOf('C:x')).toBeNull();
  });

  it('encodes each path segment, so a name is never read as a query or another path', () => {
    expect(filesPath('i', 'dir/a b?.txt')).toBe('/interns/i/files/dir/a%20b%3F.txt');
    expect(filesPath('i', '')).toBe('/interns/i/files/');
  });
});
