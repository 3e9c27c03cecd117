/**
 * `interns cp`: files between here and an intern's workspace (interface section 21), streamed both ways.
 * `cp <local> <intern>:<path>` uploads (a path ending in `/`, or empty, names a directory to put it in);
 * `cp <intern>:<path> <local>` downloads (a local directory gets the file's own name; `-` is stdout/stdin).
 * A download lands in a temporary file beside its target and is renamed over it once complete.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import type { FileEntry } from '@interns/contracts';
import type { CliContext, CommonOptions } from '../cli-context';
import { CliError, EXIT } from '../errors';
import { bodyOf, type ApiClient } from '../http/api-client';
import { isUuid, resolveInternId } from '../interns/intern-ref';
import { withCommonOptions } from './common-options';

/** `<intern>:<path>`: an intern name (or id), a colon, a workspace path. Local paths with a colon start with `./`. */
const REMOTE = /^([a-z][a-z0-9-]*|[0-9a-fA-F-]{36}):(.*)$/;

export interface RemotePath {
  intern: string;
  path: string;
}

/** The remote side of a `cp` argument, or null for a local path. */
export function remotePathOf(argument: string): RemotePath | null {
  const match = REMOTE.exec(argument);
  if (match === null) return null;
  const [, intern, path] = match;
  if (intern.length === 36 && !isUuid(intern)) return null;
  return { intern, path: path.replace(/^\/+/, '') };
}

/** `/files/<each segment percent-encoded>`: a path is segments, never a URL of its own. */
export function filesPath(internId: string, path: string): string {
  const encoded = path.split('/').filter((segment) => segment !== '').map(encodeURIComponent).join('/');
  return `/interns/${internId}/files/${encoded}`;
}

export function registerCopy(program: Command, ctx: CliContext): void {
  withCommonOptions(
    program
      .command('cp <source> <destination>')
      .description("copy a file into (`cp ./a ada:dir/`) or out of (`cp ada:dir/a .`) an intern's workspace; `-` is stdin/stdout"),
  ).action(async (source: string, destination: string, options: CommonOptions) => {
    const output = ctx.output(options);
    const from = remotePathOf(source);
    const to = remotePathOf(destination);
    if ((from === null) === (to === null)) throw CliError.usage('one side of cp is <intern>:<path>, the other a local path');
    const client = await ctx.client(options);
    if (to !== null) {
      const entry = await upload(client, source, to, ctx.io.stdin);
      output.result(entry, () => output.line(`${source} -> ${to.intern}:${joinRemote(to.path, entry.name)} (${entry.size} bytes)`));
    } else if (from !== null) {
      const written = await download(client, from, destination, ctx.io.stdout);
      if (destination !== '-') output.result(written, () => output.line(`${source} -> ${written.path} (${written.size} bytes)`));
    }
  });
}

async function upload(client: ApiClient, local: string, remote: RemotePath, stdin: NodeJS.ReadableStream): Promise<FileEntry> {
  const internId = await resolveInternId(client, remote.intern);
  let target = remote.path;
  let body: ReadableStream<Uint8Array>;
  const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
  if (local === '-') {
    if (target === '' || target.endsWith('/')) throw CliError.usage('from stdin, name the file: <intern>:<path/name>');
    body = Readable.toWeb(stdin as Readable) as ReadableStream<Uint8Array>;
  } else {
    const info = await stat(local).catch(() => null);
    if (info === null) throw new CliError(`${local}: no such file`, EXIT.notFound, 'not_found');
    if (!info.isFile()) throw CliError.usage(`${local} is not a file (cp copies one file)`);
    if (target === '' || target.endsWith('/')) target = `${target}${basename(local)}`;
    headers['content-length'] = String(info.size);
    body = Readable.toWeb(createReadStream(local)) as ReadableStream<Uint8Array>;
  }
  return client.json<FileEntry>('PUT', filesPath(internId, target), { body, headers, stream: true });
}

async function download(client: ApiClient, remote: RemotePath, local: string, stdout: NodeJS.WritableStream): Promise<{ path: string; size: number }> {
  const internId = await resolveInternId(client, remote.intern);
  const response = await client.send('GET', filesPath(internId, remote.path), { stream: true });
  if ((response.headers.get('content-type') ?? '').includes('application/json')) {
    await response.body?.cancel();
    throw CliError.usage(`${remote.intern}:${remote.path || '.'} is a directory (cp copies one file)`);
  }
  const source = Readable.fromWeb(bodyOf(response) as never);
  if (local === '-') {
    await pipeline(source, stdout as Writable, { end: false });
    return { path: '-', size: Number(response.headers.get('content-length') ?? 0) };
  }
  const name = basename(remote.path) || 'download';
  const localInfo = await stat(local).catch(() => null);
  const target = localInfo?.isDirectory() || local.endsWith('/') ? join(local, name) : local;
  const partial = join(dirname(target), `.${basename(target)}.${randomBytes(4).toString('hex')}.partial`);
  let size = 0;
  source.on('data', (chunk: Buffer) => (size += chunk.length));
  try {
    await pipeline(source, createWriteStream(partial, { flags: 'wx' }));
    const expected = response.headers.get('content-length');
    if (expected !== null && Number(expected) !== size) throw new CliError(`the download stopped at ${size} of ${expected} bytes`, EXIT.failure, 'incomplete');
    await rename(partial, target);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
  return { path: target, size };
}

function joinRemote(path: string, name: string): string {
  return path === '' || path.endsWith('/') ? `${path}${name}` : path;
}
