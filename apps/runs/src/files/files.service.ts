import { DomainError, workspacePathOf, type FilesOpenReply, type FilesOpenRequest } from '@interns/contracts';
import type { InternLookup } from '../chat/intern-lookup';
import type { DirectTransfers } from './direct-transfers';
import type { FileTransfers } from './file-transfers';
import type { TransferSlots } from './transfer-slots';
import type { FileDownload, FileUpload, WorkspaceFiles } from './workspace-files';

/** Statuses whose files are gone or going (interface section 21): a suspended (`stopped`) intern's files stay usable. */
const TORN_DOWN = new Set(['destroying', 'destroy_failed']);

/**
 * The files routes' use case on the runs side: the intern visible to the caller and not being torn down, the path
 * well-formed, then the operation; downloads and uploads continue as transfers served by this replica: straight
 * from the gateway when the transfer port is on (`direct`), else over NATS. Each holds one of the replica's slots.
 */
export class FilesService {
  constructor(
    private readonly interns: Pick<InternLookup, 'visible'>,
    private readonly files: WorkspaceFiles,
    private readonly transfers: FileTransfers,
    private readonly slots: TransferSlots,
    private readonly direct: DirectTransfers | null,
  ) {}

  async open(request: FilesOpenRequest): Promise<FilesOpenReply> {
    const intern = await this.interns.visible(request.context, request.internId);
    if (TORN_DOWN.has(intern.status)) throw new DomainError('intern_busy', `the intern is ${intern.status}: its files are being removed`);
    const path = workspacePathOf(request.path);
    switch (request.operation) {
      case 'read': {
        const read = await this.files.read(intern.id, path);
        if (read.kind === 'directory') return read;
        // Only a file is a transfer: a listing never waits for a slot.
        let release: () => void;
        try {
          release = this.slots.take();
        } catch (error) {
          read.abort();
          throw error;
        }
        return { kind: 'file', size: read.size, etag: read.etag, ...this.serveDownload(read, release) };
      }
      case 'write': {
        const size = typeof request.size === 'number' && Number.isSafeInteger(request.size) && request.size >= 0 ? request.size : null;
        const tempName = `.upload-${intern.id.slice(0, 8)}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
        const release = this.slots.take();
        const upload = await this.files.write(intern.id, path, size, tempName).catch((error: unknown) => {
          release();
          throw error;
        });
        return { kind: 'upload', ...this.serveUpload(upload, release) };
      }
      case 'delete':
        await this.files.remove(intern.id, path, request.recursive === true);
        return { kind: 'deleted' };
      default:
        throw new DomainError('invalid_body', 'unknown file operation');
    }
  }

  private serveDownload(download: FileDownload, release: () => void): { transferId: string } {
    if (this.direct !== null) return this.direct.offerDownload(download, release);
    return { transferId: this.transfers.serveDownload(download, release) };
  }

  private serveUpload(upload: FileUpload, release: () => void): { transferId: string } {
    if (this.direct !== null) return this.direct.offerUpload(upload, release);
    return { transferId: this.transfers.serveUpload(upload, release) };
  }
}
