import { safeLinkUrl } from './safe-url';

describe('links in untrusted text', () => {
  it.each([
    'javascript:alert(1)',
    'JaVaScRiPt:alert(1)',
    ' javascript:alert(1)',
    'java\tscript:alert(1)',
    'java\nscript:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    'vbscript:msgbox(1)',
    'file:///etc/passwd',
    '/api/v1/interns',
    '//evil.example/x',
    'relative/path',
    '',
  ])('drops %j', (url) => {
    expect(safeLinkUrl(url)).toBeNull();
  });

  it.each([
    ['https://example.com/a?b=c#d', 'https://example.com/a?b=c#d'],
    ['http://example.com', 'http://example.com/'],
    ['mailto:someone@example.com', 'mailto:someone@example.com'],
  ])('keeps %j', (url, kept) => {
    expect(safeLinkUrl(url)).toBe(kept);
  });
});
