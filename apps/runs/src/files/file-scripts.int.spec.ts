import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { READ_SCRIPT, UPLOAD_COMMIT_MARK_LENGTH, WRITE_SCRIPT } from './file-scripts';

/**
 * The read and write scripts on their own, in a bare bubblewrap sandbox whose `/workspace` is a temporary directory: what it
 * keeps depends on how its stdin ended, whatever the process around it does.
 */
let workspace: string;

beforeEach(async () => {
  workspace = await mkdtemp(join(tmpdir(), 'write-script-'));
});

afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

function runScript(script: string, args: string[], stdin: Buffer): Promise<{ code: number | null; stderr: string; stdout: Buffer }> {
  const system = ['/usr', '/bin', '/lib', '/lib64', '/etc'].flatMap((directory) => ['--ro-bind-try', directory, directory]);
  const sandbox = [...system, '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--bind', workspace, '/workspace', '--chdir', '/workspace'];
  const child = spawn('bwrap', [...sandbox, '--', '/bin/sh', '-c', script, 'script', ...args]);
  child.stdin.on('error', () => undefined); // EPIPE when the script refused before reading
  const stdout: Buffer[] = [];
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(stdin);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr, stdout: Buffer.concat(stdout) })));
}

const runWriteScript = (path: string, mark: string, stdin: Buffer) => runScript(WRITE_SCRIPT, [path, '.upload-test', mark], stdin);

const markOf = () => randomBytes(UPLOAD_COMMIT_MARK_LENGTH / 2).toString('hex');

it('keeps the bytes before the commit mark, and only those, when stdin ends with it', async () => {
  const mark = markOf();
  const bytes = randomBytes(300 * 1024);
  const result = await runWriteScript('dir/file.bin', mark, Buffer.concat([bytes, Buffer.from(mark)]));
  expect([result.code, result.stderr]).toEqual([0, '']);
  expect((await readFile(join(workspace, 'dir', 'file.bin'))).equals(bytes)).toBe(true);
  expect(await readdir(join(workspace, 'dir'))).toEqual(['file.bin']);
});

it('keeps nothing, not even the directories it made, when stdin closes without the mark (an upload cut short)', async () => {
  const mark = markOf();
  const withoutMark = await runWriteScript('made/here/file.bin', mark, randomBytes(64 * 1024));
  expect([withoutMark.code, withoutMark.stderr.trim()]).toEqual([1, 'the upload was cut short']);
  const otherMark = await runWriteScript('made/here/file.bin', mark, Buffer.concat([randomBytes(1024), Buffer.from(markOf())]));
  expect(otherMark.code).toBe(1);
  const empty = await runWriteScript('made/here/file.bin', mark, Buffer.alloc(0));
  expect(empty.code).toBe(1);
  expect(await readdir(workspace)).toEqual([]);
});

it('writes an empty file when the mark is all stdin carries', async () => {
  const mark = markOf();
  expect((await runWriteScript('empty.txt', mark, Buffer.from(mark))).code).toBe(0);
  expect((await readFile(join(workspace, 'empty.txt'))).length).toBe(0);
});

it('reads a file as its size header then exactly its bytes, across the reader\'s blocks and for an empty file', async () => {
  await mkdir(join(workspace, 'dir'));
  // Larger than the reader's 1 MiB block and not a multiple of it, so the last block is a short one.
  for (const size of [0, 5, 2.5 * 1024 * 1024 + 7]) {
    const bytes = randomBytes(size);
    await writeFile(join(workspace, 'dir', 'file.bin'), bytes);
    const result = await runScript(READ_SCRIPT, ['dir/file.bin', '1000'], Buffer.alloc(0));
    expect([result.code, result.stderr]).toEqual([0, '']);
    const headerEnd = result.stdout.indexOf(0x0a) + 1;
    expect(result.stdout.subarray(0, headerEnd).toString()).toMatch(new RegExp(`^F${size}/\\d+/\\d+\\.\\d{9}\\n$`));
    expect(result.stdout.subarray(headerEnd).equals(bytes)).toBe(true);
  }
});
