/**
 * An intern's files (interface section 21): the shapes the gateway and the runs service exchange, the path rules
 * both apply, and the transfer protocol that moves bodies of up to FILE_UPLOAD_MAX_BYTES over NATS in chunks.
 */
import { DomainError } from './errors';
import type { RequestContext } from './principal';

export const FILE_ENTRY_TYPES = ['file', 'directory', 'symlink', 'other'] as const;
export type FileEntryType = (typeof FILE_ENTRY_TYPES)[number];

export interface FileEntry {
  name: string;
  type: FileEntryType;
  size: number;
  modified_at: string;
}

export interface FileListing {
  data: FileEntry[];
  truncated: boolean;
}

/** A directory answers at most this many entries (the first by name); `truncated` says there were more. */
export const FILE_LIST_MAX_ENTRIES = 1000;
/**
 * Bytes per transfer message at most: NATS's default 1 MiB payload (which counts the message's headers too) less
 * FILE_CHUNK_HEADROOM for them. Fewer, larger messages cost both services less per MiB than 256 KiB ones
 * (bench/README.md, bench:files).
 */
export const FILE_CHUNK_BYTES = 1024 * 1024 - 16 * 1024;
/** Room left in a transfer message for its protocol line and headers. */
const FILE_CHUNK_HEADROOM = 16 * 1024;
/** The smallest chunk reckoned, whatever the server says. */
const FILE_CHUNK_MIN_BYTES = 4 * 1024;

/**
 * The chunk size a transfer uses with a NATS server whose `max_payload` is `maxPayload`: FILE_CHUNK_BYTES, or less
 * when the server allows less. The gateway and the runs service share one NATS, so both ends reckon the same size.
 */
export function fileChunkBytes(maxPayload: number | undefined): number {
  if (maxPayload === undefined) return FILE_CHUNK_BYTES;
  return Math.max(FILE_CHUNK_MIN_BYTES, Math.min(FILE_CHUNK_BYTES, maxPayload - FILE_CHUNK_HEADROOM));
}
/** Chunk requests a sender keeps in flight: the receiver never holds more than this many chunks of a transfer. */
export const FILE_TRANSFER_WINDOW = 4;
/** A transfer that hears nothing for this long (a client that stalled, a gateway that died) is aborted and cleaned up. */
export const FILE_TRANSFER_STALL_MS = 30_000;
/** Longest path accepted (bytes), and longest name in it: Linux's PATH_MAX and NAME_MAX. */
const MAX_PATH_BYTES = 4096;
const MAX_NAME_BYTES = 255;

export type FileOperation = 'read' | 'write' | 'delete';

export interface FilesOpenRequest {
  context: RequestContext;
  internId: string;
  /** Relative to the workspace, as `workspacePathOf` accepted it; '' is the workspace itself. */
  path: string;
  operation: FileOperation;
  /** delete: a whole tree. */
  recursive?: boolean;
  /** write: the body's announced size (Content-Length), or null when it arrives chunked. */
  size?: number | null;
}

/**
 * Where the gateway moves a transfer's body straight to the runs replica that opened it (FILE_TRANSFER_PORT on):
 * `url` (GET for a download, PUT for an upload) with `Authorization: Bearer <token>`. The token is good once, for
 * this transfer and direction, until FILE_DIRECT_TOKEN_TTL_MS passes without the connection.
 */
export interface DirectTransfer {
  url: string;
  token: string;
}

export type FilesOpenReply =
  | { kind: 'directory'; listing: FileListing }
  | { kind: 'file'; transferId: string; size: number; etag: string; direct?: DirectTransfer }
  | { kind: 'upload'; transferId: string; direct?: DirectTransfer }
  | { kind: 'deleted' };

/** How long a direct transfer's token waits for the gateway's connection: the open reply's round trip, with room. */
export const FILE_DIRECT_TOKEN_TTL_MS = 10_000;
/** Header of a direct transfer's answer whose body is a ServiceErrorPayload (a refusal the client is to see as is). */
export const FILE_DIRECT_ERROR_HEADER = 'files-error';

/** What the end of an upload answers: 201 when `created`, else 200, with the entry as written. */
export interface FileWriteResult {
  created: boolean;
  entry: FileEntry;
}

/** Header of a transfer message saying what it is (the body is a chunk, or empty). */
export const FILE_TRANSFER_OP_HEADER = 'Files-Op';
export const FILE_TRANSFER_OPS = { next: 'next', chunk: 'chunk', end: 'end', abort: 'abort' } as const;
/** Header of a transfer reply: the download's last chunk, or a refusal whose body is a ServiceErrorPayload. */
export const FILE_TRANSFER_END_HEADER = 'Files-End';
export const FILE_TRANSFER_ERROR_HEADER = 'Files-Error';

/**
 * The path of a files route as segments (interface section 21): relative to the workspace, '' (or '/') is its root.
 * Absolute paths, `.` and `..` segments, empty segments, NUL and over-long names are refused with 400 `invalid_body`.
 * This is syntax only: where a path leads (symlinks) is judged inside the intern's sandbox.
 */
export function workspacePathOf(raw: string): string {
  if (raw.startsWith('/')) throw new DomainError('invalid_body', 'path must be relative to the workspace (absolute paths are refused)');
  if (raw.includes('\0')) throw new DomainError('invalid_body', 'path must not contain NUL');
  if (Buffer.byteLength(raw) > MAX_PATH_BYTES) throw new DomainError('invalid_body', `path must be at most ${MAX_PATH_BYTES} bytes`);
  const trimmed = raw.endsWith('/') ? raw.slice(0, -1) : raw;
  if (trimmed === '') return '';
  for (const segment of trimmed.split('/')) {
    if (segment === '..') throw new DomainError('invalid_body', 'path must not contain ".." (it would leave the workspace)');
    if (segment === '' || segment === '.') throw new DomainError('invalid_body', 'path must not contain empty or "." segments');
    if (Buffer.byteLength(segment) > MAX_NAME_BYTES) throw new DomainError('invalid_body', `each name in the path must be at most ${MAX_NAME_BYTES} bytes`);
  }
  return trimmed;
}
