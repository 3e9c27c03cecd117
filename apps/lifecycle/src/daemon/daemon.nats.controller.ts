import { Controller, Inject, Type, UseFilters } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type {
  ClaimDaemonNonceReply,
  ClaimDaemonNonceRequest,
  DaemonAccessReply,
  DaemonAccessRequest,
  DaemonAuditReply,
  DaemonAuditRequest,
  DaemonSignReply,
  DaemonSignRequest,
  DaemonSigningKeysReply,
  DaemonTokenCheckReply,
  DaemonTokenCheckRequest,
  RevokeDaemonTokensReply,
  RevokeDaemonTokensRequest,
  Subjects,
  TerminalAuditRequest,
} from '@interns/contracts';
import { DomainErrorRpcFilter } from '@interns/messaging';
import { DaemonAccessService } from './daemon-access.service';
import { DaemonAuditLog } from './daemon-audit.log';
import { DaemonSigningService } from './daemon-signing.service';
import { DoorService } from './door.service';

/**
 * Adapter from NATS request/reply to daemon access, signing, their audit and the door's nonce claims; no rules live here.
 * Built with the service's subjects, so nothing reads the configuration when this file loads.
 */
export function daemonNatsController(subjects: Subjects['lifecycle']): Type<unknown> {
  @Controller()
  @UseFilters(new DomainErrorRpcFilter())
  class DaemonNatsController {
    constructor(
      @Inject(DaemonAccessService) private readonly access: DaemonAccessService,
      @Inject(DaemonSigningService) private readonly signing: DaemonSigningService,
      @Inject(DaemonAuditLog) private readonly audit: DaemonAuditLog,
      @Inject(DoorService) private readonly door: DoorService,
    ) {}

    @MessagePattern(subjects.daemonAccess)
    reveal(@Payload() request: DaemonAccessRequest): Promise<DaemonAccessReply> {
      return this.access.reveal(request);
    }

    @MessagePattern(subjects.daemonSign)
    sign(@Payload() request: DaemonSignRequest): Promise<DaemonSignReply> {
      return this.signing.sign(request);
    }

    @MessagePattern(subjects.daemonSigningKeys)
    signingKeys(): DaemonSigningKeysReply {
      return this.signing.signingKeys();
    }

    @MessagePattern(subjects.daemonTokenCheck)
    checkToken(@Payload() request: DaemonTokenCheckRequest): Promise<DaemonTokenCheckReply> {
      return this.access.check(request);
    }

    @MessagePattern(subjects.claimDaemonNonce)
    claimNonce(@Payload() request: ClaimDaemonNonceRequest): Promise<ClaimDaemonNonceReply> {
      return this.door.claimNonce(request);
    }

    @MessagePattern(subjects.revokeDaemonTokens)
    revokeOfIdentities(@Payload() request: RevokeDaemonTokensRequest): Promise<RevokeDaemonTokensReply> {
      return this.access.revokeOfIdentities(request);
    }

    @MessagePattern(subjects.recordTerminalAudit)
    recordTerminal(@Payload() request: TerminalAuditRequest): Promise<{ recorded: true }> {
      return this.audit.recordTerminal(request);
    }

    @MessagePattern(subjects.daemonAudit)
    auditOf(@Payload() request: DaemonAuditRequest): Promise<DaemonAuditReply> {
      return this.audit.report(request.internId);
    }
  }
  return DaemonNatsController;
}
