import { Controller, Inject, Type } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type { FilesOpenReply, FilesOpenRequest, Subjects } from '@interns/contracts';
import { FilesService } from './files.service';

/**
 * The gateway's way to an intern's files (interface section 21): any runs replica answers a list or delete, and
 * opens a download or upload whose chunks then go to its own transfer subject. Built in a factory because the subject
 * carries NATS_PREFIX.
 */
export function filesNatsController(subjects: Subjects['runs']): Type<unknown> {
  @Controller()
  class FilesNatsController {
    constructor(@Inject(FilesService) private readonly files: FilesService) {}

    @MessagePattern(subjects.filesOpen)
    open(@Payload() request: FilesOpenRequest): Promise<FilesOpenReply> {
      return this.files.open(request);
    }
  }
  return FilesNatsController;
}
