import { DomainError } from './errors';
import { FILE_CHUNK_BYTES, fileChunkBytes, workspacePathOf } from './files';

function refusal(raw: string): string | null {
  try {
    workspacePathOf(raw);
    return null;
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).reason).toBe('invalid_body');
    return (error as DomainError).message;
  }
}

describe('workspacePathOf', () => {
  it.each([
    ['', ''],
    ['/', null],
    ['a', 'a'],
    ['a/', 'a'],
    ['dir/sub/file.txt', 'dir/sub/file.txt'],
    ['.hidden', '.hidden'],
    ['..dots..', '..dots..'],
    ['a b/ü$(x)`y`', 'a b/ü$(x)`y`'],
    ['-rf', '-rf'],
  ])('accepts %j as %j relative to the workspace', (raw, expected) => {
    if (expected === null) expect(refusal(raw)).toMatch(/absolute/);
    else expect(workspacePathOf(raw)).toBe(expected);
  });

  it.each(['/etc/passwd', '//x', '/'])('refuses the absolute path %j', (raw) => {
    expect(refusal(raw)).toMatch(/absolute/);
  });

  it.each(['..', '../x', 'a/../../x', 'a/..', 'a/../b'])('refuses %j, which names a parent', (raw) => {
    expect(refusal(raw)).toMatch(/\.\./);
  });

  it.each(['.', './a', 'a/./b', 'a//b', 'a/b//'])('refuses %j, with an empty or "." segment', (raw) => {
    expect(refusal(raw)).toMatch(/empty or "\."/);
  });

  it('refuses NUL, names over 255 bytes and paths over 4096 bytes', () => {
    expect(refusal('a\0b')).toMatch(/NUL/);
    expect(refusal(`${'é'.repeat(128)}`)).toMatch(/255 bytes/);
    expect(workspacePathOf('x'.repeat(255))).toBe('x'.repeat(255));
    expect(refusal(Array.from({ length: 20 }, () => 'y'.repeat(250)).join('/'))).toMatch(/4096 bytes/);
  });
});

describe('fileChunkBytes', () => {
  it("is FILE_CHUNK_BYTES under NATS's default 1 MiB max_payload, and leaves room for headers under a smaller one", () => {
    expect(fileChunkBytes(1024 * 1024)).toBe(FILE_CHUNK_BYTES);
    expect(FILE_CHUNK_BYTES).toBeLessThan(1024 * 1024);
    expect(fileChunkBytes(8 * 1024 * 1024)).toBe(FILE_CHUNK_BYTES);
    expect(fileChunkBytes(undefined)).toBe(FILE_CHUNK_BYTES);
    const small = 512 * 1024;
    expect(fileChunkBytes(small)).toBeLessThan(small);
    expect(fileChunkBytes(small)).toBeGreaterThan(small / 2);
  });
});
