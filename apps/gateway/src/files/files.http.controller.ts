import { Controller, Delete, Get, Inject, Param, Put, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, workspacePathOf, type FileOperation, type FilesOpenReply, type FilesOpenRequest, type PlatformConfig } from '@interns/contracts';
import { GATEWAY_CONFIG } from '../gateway.tokens';
import { INTERN_ID_PARAM, visibleId } from '../interns/intern-routes';
import { ServiceClient } from '../service.client';
import { DirectTransferClient } from './direct-transfer.client';
import { FileTransferClient } from './file-transfer.client';
import { uploadBodyOf } from './file-upload-body';

const FILES = `:${INTERN_ID_PARAM}/files`;
/** Fastify's wildcard: the rest of the path, decoded. */
const PATH_PARAM = '*';

/**
 * HTTP adapter of an intern's files (interface section 21). Intern routes: the admission hook ran checks 1-5 (none of
 * these is a lifecycle write: they are the intern's own work, like chat, and an intern key may use its own intern's
 * files). Here the body rules (the upload's size), the path's syntax and the intern id; the runs service does the
 * rest inside the intern's sandbox. Bodies go straight to the runs replica that opened the transfer when its reply
 * says how (`direct`: DirectTransferClient), else as chunked transfers over NATS (FileTransferClient).
 */
@Controller('interns')
export class FilesHttpController {
  constructor(
    @Inject(ServiceClient) private readonly services: ServiceClient,
    @Inject(FileTransferClient) private readonly transfers: FileTransferClient,
    @Inject(DirectTransferClient) private readonly direct: DirectTransferClient,
    @Inject(GATEWAY_CONFIG) private readonly config: PlatformConfig,
  ) {}

  @Get(FILES)
  readRoot(@Req() request: FastifyRequest, @Res() reply: FastifyReply, @Param(INTERN_ID_PARAM) internId: string): Promise<FastifyReply> {
    return this.read(request, reply, internId, '');
  }

  @Get(`${FILES}/*`)
  async read(@Req() request: FastifyRequest, @Res() reply: FastifyReply, @Param(INTERN_ID_PARAM) internId: string, @Param(PATH_PARAM) path: string): Promise<FastifyReply> {
    const opened = await this.open(request, internId, path, 'read');
    if (opened.kind === 'directory') return reply.send(opened.listing);
    if (opened.kind !== 'file') throw new DomainError('internal_error', 'the runs service answered a read with something else');
    return reply
      .type('application/octet-stream')
      .header('content-length', opened.size)
      .header('etag', opened.etag)
      .send(opened.direct === undefined ? this.transfers.download(opened.transferId, opened.size) : await this.direct.download(opened.direct));
  }

  @Put(`${FILES}/*`)
  async write(@Req() request: FastifyRequest, @Res() reply: FastifyReply, @Param(INTERN_ID_PARAM) internId: string, @Param(PATH_PARAM) path: string): Promise<FastifyReply> {
    const body = uploadBodyOf(request);
    const max = this.config.fileUploadMaxBytes;
    try {
      if (body !== null && body.length !== null && body.length > max) throw new DomainError('payload_too_large', `a file upload may carry at most ${max} bytes`);
      const opened = await this.open(request, internId, path, 'write', { size: body === null ? 0 : body.length });
      if (opened.kind !== 'upload') throw new DomainError('internal_error', 'the runs service answered an upload with something else');
      const written =
        opened.direct === undefined ? await this.transfers.upload(opened.transferId, body?.stream ?? null, max) : await this.direct.upload(opened.direct, body, max);
      return reply.status(written.created ? 201 : 200).send(written.entry);
    } catch (error) {
      // The rest of a refused body is not read: the connection closes instead of draining up to 100 MiB.
      if (body !== null && !body.stream.readableEnded) reply.header('connection', 'close');
      throw error;
    }
  }

  @Delete(`${FILES}/*`)
  async remove(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Param(INTERN_ID_PARAM) internId: string,
    @Param(PATH_PARAM) path: string,
    @Query('recursive') recursive: unknown,
  ): Promise<FastifyReply> {
    await this.open(request, internId, path, 'delete', { recursive: recursiveOf(recursive) });
    return reply.status(204).send();
  }

  private open(request: FastifyRequest, internId: string, path: string, operation: FileOperation, extra: Partial<FilesOpenRequest> = {}): Promise<FilesOpenReply> {
    const checkedPath = workspacePathOf(path ?? '');
    const payload: FilesOpenRequest = { context: this.services.contextOf(request), internId: visibleId(internId), path: checkedPath, operation, ...extra };
    return this.services.request<FilesOpenReply>(this.services.subjects.runs.filesOpen, request, payload);
  }
}

/** `?recursive=true` deletes a tree; absent or `false` does not; anything else is a mistake (400). */
function recursiveOf(value: unknown): boolean {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw new DomainError('invalid_body', 'recursive must be true or false');
}
