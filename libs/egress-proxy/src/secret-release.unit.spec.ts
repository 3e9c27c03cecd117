import { scanPlaceholders, substitutePlaceholders } from './secret-release';

const token = { name: 'token', hosts: ['api.test'], placeholder: 'vault:token:aaaa' };
const key = { name: 'key', hosts: ['other.test'], placeholder: 'vault:key:bbbb' };

describe('secret release', () => {
  it('finds placeholders in header values only, split by whether the secret is bound to the host', () => {
    const headers = ['Authorization', 'Bearer vault:token:aaaa', 'vault:key:bbbb', 'name-not-value', 'X-Key', 'k=vault:key:bbbb'];
    expect(scanPlaceholders(headers, [token, key], 'api.test')).toEqual({ releasable: [token], unreleasable: [key] });
    expect(scanPlaceholders(['Accept', '*/*'], [token, key], 'api.test')).toEqual({ releasable: [], unreleasable: [] });
  });

  it('replaces every occurrence in every header value, taking values literally', () => {
    const headers = ['Authorization', 'vault:token:aaaa', 'X-Twice', 'vault:token:aaaa/vault:token:aaaa', 'vault:token:aaaa', 'kept'];
    expect(substitutePlaceholders(headers, new Map([['vault:token:aaaa', '$&$1']]))).toEqual([
      'Authorization', '$&$1', 'X-Twice', '$&$1/$&$1', 'vault:token:aaaa', 'kept',
    ]);
  });
});
