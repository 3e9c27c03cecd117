import { DomainError, workspacePathOf, type FilesOpenReply, type FilesOpenRequest } from '@interns/contracts';
import type { InternLookup } from '../chat/intern-lookup';
import type { FileTransfers } from './file-transfers';
import type { WorkspaceFiles } from './workspace-files';

/** Statuses whose files are gone or going (interface section 21): a suspended (`stopped`) intern's files stay usable. */
const TORN_DOWN = new Set(['destroying', 'destroy_failed']);

/**
 * The files routes' use case on the runs side: the intern visible to the caller and not being torn down, the path
 * well-formed, then the operation; downloads and uploads continue as transfers served by this replica.
 */
export class FilesService {
  constructor(
    private readonly interns: Pick<InternLookup, 'visible'>,
    private readonly files: WorkspaceFiles,
    private readonly transfers: FileTransfers,
  ) {}

  async open(request: FilesOpenRequest): Promise<FilesOpenReply> {
    const intern = await this.interns.visible(request.context, request.internId);
    if (TORN_DOWN.has(intern.status)) throw new DomainError('intern_busy', `the intern is ${intern.status}: its files are being removed`);
    const path = workspacePathOf(request.path);
    switch (request.operation) {
      case 'read': {
        const read = await this.files.read(intern.id, path);
        if (read.kind === 'directory') return read;
        return { kind: 'file', size: read.size, etag: read.etag, transferId: this.transfers.serveDownload(read) };
      }
      case 'write': {
        const size = typeof request.size === 'number' && Number.isSafeInteger(request.size) && request.size >= 0 ? request.size : null;
        const tempName = `.upload-${intern.id.slice(0, 8)}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
        return { kind: 'upload', transferId: this.transfers.serveUpload(await this.files.write(intern.id, path, size, tempName)) };
      }
      case 'delete':
        await this.files.remove(intern.id, path, request.recursive === true);
        return { kind: 'deleted' };
      default:
        throw new DomainError('invalid_body', 'unknown file operation');
    }
  }
}
