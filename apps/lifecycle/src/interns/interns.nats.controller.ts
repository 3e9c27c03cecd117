import { Controller, Inject, UseFilters } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type {
  CreateInternReply,
  CreateInternRequest,
  DeleteInternRequest,
  GetInternRequest,
  InternIconReply,
  InternIconRequest,
  InternList,
  InternOwnerReply,
  InternOwnerRequest,
  InternView,
  ListInternsRequest,
  ProvisionInternRequest,
  RecordChatappInstallReply,
  RecordChatappInstallRequest,
  SuspendInternRequest,
  UpdateInternRequest,
} from '@interns/contracts';
import { loadConfig, subjectsFor } from '@interns/contracts';
import { DomainErrorRpcFilter } from '@interns/messaging';
import { ChatappInstallsService } from '../chatapp/chatapp-installs.service';
import { InternCommandsService } from './intern-commands.service';
import { InternQueriesService } from './intern-queries.service';
import { InternTransitionsService } from './intern-transitions.service';

// Decorators are evaluated when this module loads, after the process environment is fixed.
const SUBJECTS = subjectsFor(loadConfig(process.env).natsPrefix).lifecycle;

/** Adapter from NATS request/reply to the intern use cases; no rules live here. */
@Controller()
@UseFilters(new DomainErrorRpcFilter())
export class InternsNatsController {
  constructor(
    @Inject(InternCommandsService) private readonly commands: InternCommandsService,
    @Inject(InternTransitionsService) private readonly transitions: InternTransitionsService,
    @Inject(InternQueriesService) private readonly queries: InternQueriesService,
    @Inject(ChatappInstallsService) private readonly installs: ChatappInstallsService,
  ) {}

  @MessagePattern(SUBJECTS.createIntern)
  create(@Payload() request: CreateInternRequest): Promise<CreateInternReply> {
    return this.commands.create(request);
  }

  @MessagePattern(SUBJECTS.updateIntern)
  update(@Payload() request: UpdateInternRequest): Promise<InternView> {
    return this.commands.update(request);
  }

  @MessagePattern(SUBJECTS.provisionIntern)
  provision(@Payload() request: ProvisionInternRequest): Promise<{ provisioning: true }> {
    return this.transitions.provision(request);
  }

  @MessagePattern(SUBJECTS.suspendIntern)
  suspend(@Payload() request: SuspendInternRequest): Promise<{ suspended: true }> {
    return this.transitions.suspend(request);
  }

  @MessagePattern(SUBJECTS.deleteIntern)
  delete(@Payload() request: DeleteInternRequest): Promise<{ deleting: true }> {
    return this.transitions.delete(request);
  }

  @MessagePattern(SUBJECTS.recordChatappInstall)
  recordChatappInstall(@Payload() request: RecordChatappInstallRequest): Promise<RecordChatappInstallReply> {
    return this.installs.record(request);
  }

  @MessagePattern(SUBJECTS.getIntern)
  get(@Payload() request: GetInternRequest): Promise<InternView> {
    return this.queries.get(request);
  }

  @MessagePattern(SUBJECTS.listInterns)
  list(@Payload() request: ListInternsRequest): Promise<InternList> {
    return this.queries.list(request);
  }

  @MessagePattern(SUBJECTS.internIcon)
  icon(@Payload() request: InternIconRequest): Promise<InternIconReply> {
    return this.queries.icon(request);
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
