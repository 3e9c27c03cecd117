import { randomBytes } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import { Logger } from '@nestjs/common';
import { DomainError, FILE_CHUNK_BYTES, FILE_LIST_MAX_ENTRIES, type FileEntry, type FileEntryType, type FileListing, type FileWriteResult } from '@interns/contracts';
import { BubblewrapShell } from '../runtime/shell/bubblewrap-shell';
import { parseStatus, SandboxRefusal } from '../runtime/shell/sandbox-launch';
import { streamProcess, type StreamedProcess } from '../runtime/shell/sandbox-stream';
import type { ShellRunner } from '../runtime/shell/shell-runner';
import { WorkspaceDiskUnavailable, type WorkspaceDisks } from '../runtime/workspace-disk';
import { DELETE_SCRIPT, FILE_SCRIPT_EXIT, READ_SCRIPT, UPLOAD_CLEANUP_SCRIPT, UPLOAD_COMMIT_MARK_LENGTH, WRITE_SCRIPT } from './file-scripts';
import { stdinWriter } from './stdin-writer';
import { readHead } from './stream-reading';

/** A whole file operation (a 100 MiB transfer included) never runs longer than this; stalls end it much sooner. */
const OPERATION_CEILING_MS = 60 * 60 * 1000;
/** A listing, a delete, a cleanup: these end quickly or not at all. */
const QUICK_OPERATION_MS = 60_000;
/** A listing of 1001 entries of at most 255-byte names with their sizes and times fits easily. */
const LISTING_LIMIT_BYTES = 1001 * 320;
const STDERR_LIMIT_BYTES = 1024;
/** Pieces of a download (up to 64 KiB each, one read of the reader's pipe) read ahead: about one transfer chunk. */
const READ_AHEAD_PIECES = 16;

const TYPES: Record<string, FileEntryType> = { f: 'file', d: 'directory', l: 'symlink' };

export interface WorkspaceFilesOptions {
  /** Attaches the intern's disk (a suspended intern's too) and answers its workspace, or null when it has none. */
  workspaceOf(internId: string): Promise<string | null>;
  /** The shell tool's runner: only the bubblewrap sandbox can run file operations. */
  shell: ShellRunner;
  /** How full a workspace is: an upload that cannot fit is refused before a byte lands. */
  disks: Pick<WorkspaceDisks, 'usage'>;
}

/** A file being read: its size, an ETag, and its bytes (end `finish()` after them: it says whether all went well). */
export interface FileDownload {
  size: number;
  etag: string;
  stream: Readable;
  finish(): Promise<void>;
  abort(): void;
}

/** An upload on its way into the workspace: `write` resolves once a chunk is in the pipe (backpressure). */
export interface FileUpload {
  write(chunk: Uint8Array): Promise<void>;
  end(): Promise<FileWriteResult>;
  /** Kills the writer and removes what it left (its temporary file, the directories it made). */
  abort(): Promise<void>;
}

/** The intern's sandbox, ready to launch a file operation in. */
interface SandboxTarget {
  shell: BubblewrapShell;
  internId: string;
  workspace: string;
  uid: number;
}

/**
 * An intern's files (interface section 21). Every operation is a command in the intern's own sandbox, as its uid,
 * with no network (file-scripts.ts): the platform never follows a path on the host. Refusals are DomainErrors.
 */
export class WorkspaceFiles {
  private readonly logger = new Logger('Files');

  constructor(private readonly options: WorkspaceFilesOptions) {}

  /** A directory's listing, or a file ready to stream. */
  async read(internId: string, path: string): Promise<{ kind: 'directory'; listing: FileListing } | ({ kind: 'file' } & FileDownload)> {
    const target = await this.target(internId);
    const running = await this.start(target, READ_SCRIPT, [path, String(FILE_LIST_MAX_ENTRIES)], OPERATION_CEILING_MS);
    const { process } = running;
    process.stdin.end();
    let first: { head: Buffer; ended: boolean };
    try {
      first = await readHead(process.stdout, LISTING_LIMIT_BYTES, (bytes) => (bytes[0] === 0x46 ? nextNewline(bytes) : null));
    } catch (error) {
      process.kill();
      throw error;
    }
    if (first.head[0] === 0x46 /* F */ && !first.ended) {
      const [size, inode, mtime] = first.head.subarray(1, first.head.length - 1).toString('utf8').split('/');
      return {
        kind: 'file',
        size: Number(size),
        // Size, inode and modification time in ns: a replaced file (a new inode) or a rewritten one changes it.
        etag: `"${Number(size).toString(16)}-${Number(inode).toString(16)}-${BigInt(mtime.replace('.', '')).toString(16)}"`,
        // Piped on (flowing mode, with backpressure) rather than read where readHead left it paused: a file small
        // enough to arrive with its header and the pipe's end in one read then still ends its stream. The reading
        // side hands on each piece as it came (object mode): a byte stream's read() would join what is buffered
        // first, one more copy of every byte before chunksOf joins them into a transfer chunk.
        stream: process.stdout.pipe(new PassThrough({ writableHighWaterMark: FILE_CHUNK_BYTES, readableObjectMode: true, readableHighWaterMark: READ_AHEAD_PIECES })),
        finish: () => this.outcome(running),
        abort: () => process.kill(),
      };
    }
    await this.outcome(running);
    if (first.head[0] !== 0x44 /* D */) throw new Error('the read answered neither a directory nor a file');
    return { kind: 'directory', listing: parseListing(first.head.subarray(1)) };
  }

  /** Starts an upload to `path` (not the workspace itself); `size` is the announced length, when there is one. */
  async write(internId: string, path: string, size: number | null, tempName: string): Promise<FileUpload> {
    if (path === '') throw new DomainError('invalid_body', 'a file path is required (the workspace itself is a directory)');
    const target = await this.target(internId);
    const usage = await this.options.disks.usage(target.workspace);
    if (usage !== null) {
      if (size !== null && size > usage.availableBytes) {
        throw new DomainError('limit_reached', `the file (${size} bytes) does not fit the workspace quota (${usage.availableBytes} bytes free)`);
      }
      if (usage.inodes !== null && usage.inodes.available < 1) throw new DomainError('limit_reached', 'the workspace holds the most files it may');
    }
    const commitMark = randomBytes(UPLOAD_COMMIT_MARK_LENGTH / 2).toString('hex');
    const running = await this.start(target, WRITE_SCRIPT, [path, tempName, commitMark], OPERATION_CEILING_MS);
    const { process } = running;
    let output = Buffer.alloc(0);
    process.stdout.on('data', (chunk: Buffer) => {
      if (output.length < 64 * 1024) output = Buffer.concat([output, chunk]);
    });
    const writeToStdin = stdinWriter(process.stdin, process.finished);
    return {
      write: async (chunk) => {
        // A writer that ended (the quota reached mid-way) reads no more: its outcome is the answer.
        if (!(await writeToStdin(chunk))) {
          await this.outcome(running);
          throw new DomainError('internal_error', 'the upload ended early; try again');
        }
      },
      end: async () => {
        process.stdin.end(commitMark);
        await this.outcome(running);
        const [, , result] = output.toString('utf8').split('\0');
        const [existed, written, mtime] = result.split('/');
        return { created: existed === '0', entry: { name: basename(path), type: 'file', size: Number(written), modified_at: isoOf(mtime) } };
      },
      abort: async () => {
        process.kill();
        const exit = await process.finished.catch(() => null);
        // A writer that reached its own end (success, or a refusal after its own undo) left nothing to remove.
        if (exit !== null && parseStatus(exit.fdOutputs.get(running.statusFd) ?? '').exitCode !== null) return;
        const [parent, first] = output.toString('utf8').split('\0');
        // Nothing was made before the writer said where (it says so before making anything).
        if (first === undefined) return;
        await this.quick(target, UPLOAD_CLEANUP_SCRIPT, [`${parent}/${tempName}`, first]).catch((error: unknown) =>
          this.logger.error(`an aborted upload of intern ${internId} could not be cleaned up: ${(error as Error).message}`),
        );
      },
    };
  }

  async remove(internId: string, path: string, recursive: boolean): Promise<void> {
    if (path === '') throw new DomainError('invalid_body', 'the workspace itself cannot be deleted');
    await this.quick(await this.target(internId), DELETE_SCRIPT, [path, recursive ? '1' : '0']);
  }

  /** Runs a short command to its end; its refusal thrown. */
  private async quick(target: SandboxTarget, script: string, args: string[]): Promise<void> {
    const running = await this.start(target, script, args, QUICK_OPERATION_MS);
    running.process.stdout.resume();
    running.process.stdin.end();
    await this.outcome(running);
  }

  private async target(internId: string): Promise<SandboxTarget> {
    const { shell } = this.options;
    if (!(shell instanceof BubblewrapShell)) {
      throw new DomainError('configuration_error', "files are moved only inside the intern's sandbox, and this host runs without it (RUNTIME_SANDBOX=off)");
    }
    let workspace: string | null;
    try {
      workspace = await this.options.workspaceOf(internId);
    } catch (error) {
      if (!(error instanceof WorkspaceDiskUnavailable)) throw error;
      this.logger.error(`the workspace disk of intern ${internId} could not be attached: ${error.message}`);
      throw new DomainError('internal_error', 'the workspace disk of this intern could not be attached; try again');
    }
    if (workspace === null) throw new DomainError('not_found', 'this intern has no workspace yet');
    return { shell, internId, workspace, uid: await shell.sandboxUser(internId, workspace) };
  }

  private async start(target: SandboxTarget, script: string, args: string[], timeoutMs: number): Promise<{ process: StreamedProcess; statusFd: number }> {
    const { launcher } = target.shell;
    const host = await launcher.ready();
    if (host instanceof SandboxRefusal) throw this.unavailable(host.message);
    // No egress grant: file operations need no network, so the sandbox has none.
    const launch = await launcher.launch(host, { cgroupName: target.internId, uid: target.uid, workspace: target.workspace, command: script, commandArgs: args });
    if (launch instanceof SandboxRefusal) throw this.unavailable(launch.message);
    const process = streamProcess(launch.plan, { stderrLimitBytes: STDERR_LIMIT_BYTES, timeoutMs });
    return { process, statusFd: launch.statusFd };
  }

  /** Waits for the command's end and maps its exit code (file-scripts.ts) to the contract's refusals. */
  private async outcome({ process, statusFd }: { process: StreamedProcess; statusFd: number }): Promise<void> {
    let exit;
    try {
      exit = await process.finished;
    } catch (error) {
      throw this.unavailable((error as Error).message);
    }
    const { exitCode } = parseStatus(exit.fdOutputs.get(statusFd) ?? '');
    if (exitCode === 0) return;
    const reason = exit.stderr.split('\n')[0].trim();
    if (exitCode === FILE_SCRIPT_EXIT.notFound) throw new DomainError('not_found', 'no such file or directory');
    if (exitCode === FILE_SCRIPT_EXIT.full) throw new DomainError('limit_reached', 'the workspace quota is reached: nothing of the upload was kept');
    if (exitCode === FILE_SCRIPT_EXIT.outside || exitCode === FILE_SCRIPT_EXIT.wrongKind || exitCode === FILE_SCRIPT_EXIT.notEmpty) {
      throw new DomainError('invalid_body', reason || 'the path cannot be used');
    }
    if (exitCode === null && !exit.killed) throw this.unavailable(reason || 'the sandbox could not be built');
    if (exitCode === null) throw new DomainError('internal_error', 'the file operation was stopped; try again');
    this.logger.warn(`a file operation failed (exit code ${exitCode}): ${reason}`);
    throw new DomainError('internal_error', 'the file operation failed; try again');
  }

  private unavailable(why: string): DomainError {
    this.logger.error(`file operation refused: ${why}`);
    return new DomainError('internal_error', 'the sandbox is unavailable (the runs service\'s log says why); try again');
  }
}

/** `name/type/size/mtime\0` records (find's `%f/%y/%s/%T@`): at most FILE_LIST_MAX_ENTRIES, `truncated` beyond. */
export function parseListing(bytes: Buffer): FileListing {
  const records = bytes.toString('utf8').split('\0').filter((record) => record !== '');
  const data: FileEntry[] = records.slice(0, FILE_LIST_MAX_ENTRIES).map((record) => {
    const [name, type, size, mtime] = record.split('/');
    return { name, type: TYPES[type] ?? 'other', size: Number(size), modified_at: isoOf(mtime) };
  });
  return { data, truncated: records.length > FILE_LIST_MAX_ENTRIES };
}

/** find's `%T@` (seconds with a fraction) as ISO 8601 UTC with milliseconds. */
function isoOf(seconds: string): string {
  return new Date(Math.floor(Number(seconds) * 1000)).toISOString();
}

function nextNewline(bytes: Buffer): number | null {
  const at = bytes.indexOf(0x0a);
  return at === -1 ? null : at + 1;
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}
