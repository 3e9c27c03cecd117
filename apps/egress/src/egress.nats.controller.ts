import { Controller, Inject, Type, UseFilters } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type {
  CloseEgressListenerRequest,
  EgressLogPage,
  EgressLogRequest,
  OpenEgressListenerReply,
  OpenEgressListenerRequest,
  PurgeEgressLogRequest,
  RenewEgressListenerRequest,
  RuntimeStepReply,
  Subjects,
} from '@interns/contracts';
import { DomainErrorRpcFilter } from '@interns/messaging';
import { EgressListeners } from './listeners/egress-listeners';
import { EgressLogService } from './log/egress-log.service';

/** Adapter from NATS request/reply to the egress service (interface section 19); no rules live here. */
export function egressNatsController(subjects: Subjects['egress'], instanceId: string): Type<unknown> {
  @Controller()
  @UseFilters(new DomainErrorRpcFilter())
  class EgressNatsController {
    constructor(
      @Inject(EgressListeners) private readonly listeners: EgressListeners,
      @Inject(EgressLogService) private readonly log: EgressLogService,
    ) {}

    @MessagePattern(subjects.openListener(instanceId))
    open(@Payload() request: OpenEgressListenerRequest): Promise<OpenEgressListenerReply> {
      return this.listeners.open(request);
    }

    @MessagePattern(subjects.closeListener(instanceId))
    close(@Payload() request: CloseEgressListenerRequest): Promise<{ closed: true }> {
      return this.listeners.close(request);
    }

    @MessagePattern(subjects.renewListener(instanceId))
    renew(@Payload() request: RenewEgressListenerRequest): { renewed: boolean } {
      return this.listeners.renew(request);
    }

    @MessagePattern(subjects.log)
    page(@Payload() request: EgressLogRequest): Promise<EgressLogPage> {
      return this.log.page(request);
    }

    @MessagePattern(subjects.purgeLog)
    purge(@Payload() request: PurgeEgressLogRequest): Promise<RuntimeStepReply> {
      return this.log.purge(request);
    }
  }
  return EgressNatsController;
}
