import { Controller, Inject, UseFilters } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type {
  DaemonAccessReply,
  DaemonAccessRequest,
  DaemonAuditReply,
  DaemonAuditRequest,
  DaemonSignReply,
  DaemonSignRequest,
  DaemonSigningKeysReply,
  DaemonTokenCheckReply,
  DaemonTokenCheckRequest,
} from '@interns/contracts';
import { loadConfig, subjectsFor } from '@interns/contracts';
import { DomainErrorRpcFilter } from '@interns/messaging';
import { DaemonAccessService } from './daemon-access.service';
import { DaemonAuditLog } from './daemon-audit.log';
import { DaemonSigningService } from './daemon-signing.service';

// Decorators are evaluated when this module loads, after the process environment is fixed.
const SUBJECTS = subjectsFor(loadConfig(process.env).natsPrefix).lifecycle;

/** Adapter from NATS request/reply to daemon access, signing and their audit; no rules live here. */
@Controller()
@UseFilters(new DomainErrorRpcFilter())
export class DaemonNatsController {
  constructor(
    @Inject(DaemonAccessService) private readonly access: DaemonAccessService,
    @Inject(DaemonSigningService) private readonly signing: DaemonSigningService,
    @Inject(DaemonAuditLog) private readonly audit: DaemonAuditLog,
  ) {}

  @MessagePattern(SUBJECTS.daemonAccess)
  reveal(@Payload() request: DaemonAccessRequest): Promise<DaemonAccessReply> {
    return this.access.reveal(request);
  }

  @MessagePattern(SUBJECTS.daemonSign)
  sign(@Payload() request: DaemonSignRequest): Promise<DaemonSignReply> {
    return this.signing.sign(request);
  }

  @MessagePattern(SUBJECTS.daemonSigningKeys)
  signingKeys(): DaemonSigningKeysReply {
    return this.signing.signingKeys();
  }

  @MessagePattern(SUBJECTS.daemonTokenCheck)
  checkToken(@Payload() request: DaemonTokenCheckRequest): Promise<DaemonTokenCheckReply> {
    return this.access.check(request);
  }

  @MessagePattern(SUBJECTS.daemonAudit)
  auditOf(@Payload() request: DaemonAuditRequest): Promise<DaemonAuditReply> {
    return this.audit.report(request.internId);
  }
}
