import { Controller, Inject, Type, UseFilters } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type {
  CreateInternReply,
  CreateInternRequest,
  DeleteInternRequest,
  EgressPolicy,
  GetEgressPolicyRequest,
  InternIconReply,
  InternIconRequest,
  InternOwnerReply,
  InternOwnerRequest,
  InternView,
  ProvisionInternRequest,
  PutEgressPolicyRequest,
  RecordChatappInstallReply,
  RecordChatappInstallRequest,
  SuspendInternRequest,
  UpdateInternRequest,
  Subjects,
} from '@interns/contracts';
import { DomainErrorRpcFilter } from '@interns/messaging';
import { ChatappInstallsService } from './chatapp-installs.service';
import { InternCommandsService } from './intern-commands.service';
import { InternQueriesService } from './intern-queries.service';
import { InternTransitionsService } from './intern-transitions.service';

/**
 * Adapter from NATS request/reply to the intern use cases; no rules live here. Get and list are served on
 * the lean path instead (interns.lean-handlers.ts).
 * Built with the service's subjects, so nothing reads the configuration when this file loads.
 */
export function internsNatsController(subjects: Subjects['lifecycle']): Type<unknown> {
  @Controller()
  @UseFilters(new DomainErrorRpcFilter())
  class InternsNatsController {
    constructor(
      @Inject(InternCommandsService) private readonly commands: InternCommandsService,
      @Inject(InternTransitionsService) private readonly transitions: InternTransitionsService,
      @Inject(InternQueriesService) private readonly queries: InternQueriesService,
      @Inject(ChatappInstallsService) private readonly installs: ChatappInstallsService,
    ) {}

    @MessagePattern(subjects.createIntern)
    create(@Payload() request: CreateInternRequest): Promise<CreateInternReply> {
      return this.commands.create(request);
    }

    @MessagePattern(subjects.updateIntern)
    update(@Payload() request: UpdateInternRequest): Promise<InternView> {
      return this.commands.update(request);
    }

    @MessagePattern(subjects.egressPolicy)
    egressPolicy(@Payload() request: GetEgressPolicyRequest): Promise<EgressPolicy> {
      return this.queries.egressPolicy(request);
    }

    @MessagePattern(subjects.putEgressPolicy)
    putEgressPolicy(@Payload() request: PutEgressPolicyRequest): Promise<EgressPolicy> {
      return this.commands.putEgressPolicy(request);
    }

    @MessagePattern(subjects.provisionIntern)
    provision(@Payload() request: ProvisionInternRequest): Promise<{ provisioning: true }> {
      return this.transitions.provision(request);
    }

    @MessagePattern(subjects.suspendIntern)
    suspend(@Payload() request: SuspendInternRequest): Promise<{ suspended: true }> {
      return this.transitions.suspend(request);
    }

    @MessagePattern(subjects.deleteIntern)
    delete(@Payload() request: DeleteInternRequest): Promise<{ deleting: true }> {
      return this.transitions.delete(request);
    }

    @MessagePattern(subjects.recordChatappInstall)
    recordChatappInstall(@Payload() request: RecordChatappInstallRequest): Promise<RecordChatappInstallReply> {
      return this.installs.record(request);
    }

    @MessagePattern(subjects.internIcon)
    icon(@Payload() request: InternIconRequest): Promise<InternIconReply> {
      return this.queries.icon(request);
    }

    @MessagePattern(subjects.internOwner)
    owner(@Payload() request: InternOwnerRequest): Promise<InternOwnerReply> {
      return this.queries.owner(request);
    }

    @MessagePattern(subjects.ping)
    ping(): { service: 'lifecycle'; ok: true } {
      return { service: 'lifecycle', ok: true };
    }
  }
  return InternsNatsController;
}
