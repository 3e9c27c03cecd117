import { Controller, Inject, UseFilters } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type {
  CreateInternReply,
  CreateInternRequest,
  GetInternRequest,
  InternList,
  InternOwnerReply,
  InternOwnerRequest,
  InternView,
  ListInternsRequest,
  UpdateInternRequest,
} from '@interns/contracts';
import { loadConfig, subjectsFor } from '@interns/contracts';
import { DomainErrorRpcFilter } from '@interns/messaging';
import { InternCommandsService } from './intern-commands.service';
import { InternQueriesService } from './intern-queries.service';

// Decorators are evaluated when this module loads, after the process environment is fixed.
const SUBJECTS = subjectsFor(loadConfig(process.env).natsPrefix).lifecycle;

/** Adapter from NATS request/reply to the intern use cases; no rules live here. */
@Controller()
@UseFilters(new DomainErrorRpcFilter())
export class InternsNatsController {
  constructor(
    @Inject(InternCommandsService) private readonly commands: InternCommandsService,
    @Inject(InternQueriesService) private readonly queries: InternQueriesService,
  ) {}

  @MessagePattern(SUBJECTS.createIntern)
  create(@Payload() request: CreateInternRequest): Promise<CreateInternReply> {
    return this.commands.create(request);
  }

  @MessagePattern(SUBJECTS.updateIntern)
  update(@Payload() request: UpdateInternRequest): Promise<InternView> {
    return this.commands.update(request);
  }

  @MessagePattern(SUBJECTS.getIntern)
  get(@Payload() request: GetInternRequest): Promise<InternView> {
    return this.queries.get(request);
  }

  @MessagePattern(SUBJECTS.listInterns)
  list(@Payload() request: ListInternsRequest): Promise<InternList> {
    return this.queries.list(request);
  }

  @MessagePattern(SUBJECTS.internOwner)
  owner(@Payload() request: InternOwnerRequest): Promise<InternOwnerReply> {
    return this.queries.owner(request);
  }

  @MessagePattern(SUBJECTS.ping)
  ping(): { service: 'lifecycle'; ok: true } {
    return { service: 'lifecycle', ok: true };
  }
}
