import { Controller, Inject, Type, UseFilters } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type { EgressContextReply, EgressContextRequest, Subjects, VaultCopyRequest, VaultDeleteRequest, VaultListRequest, VaultPutRequest, VaultSecret, VaultSecretList } from '@interns/contracts';
import { DomainErrorRpcFilter } from '@interns/messaging';
import { VaultService } from './vault.service';

/** Adapter from NATS request/reply to the vault (interface section 18); no rules live here. */
export function vaultNatsController(subjects: Subjects['lifecycle']): Type<unknown> {
  @Controller()
  @UseFilters(new DomainErrorRpcFilter())
  class VaultNatsController {
    constructor(@Inject(VaultService) private readonly vault: VaultService) {}

    @MessagePattern(subjects.vaultList)
    list(@Payload() request: VaultListRequest): Promise<VaultSecretList> {
      return this.vault.list(request);
    }

    @MessagePattern(subjects.vaultPut)
    put(@Payload() request: VaultPutRequest): Promise<{ data: VaultSecret }> {
      return this.vault.put(request);
    }

    @MessagePattern(subjects.vaultDelete)
    delete(@Payload() request: VaultDeleteRequest): Promise<{ deleted: true }> {
      return this.vault.delete(request);
    }

    @MessagePattern(subjects.egressContext)
    egressContext(@Payload() request: EgressContextRequest): Promise<EgressContextReply> {
      return this.vault.egressContext(request);
    }

    @MessagePattern(subjects.vaultCopy)
    copy(@Payload() request: VaultCopyRequest): Promise<{ data: VaultSecret[] }> {
      return this.vault.copy(request);
    }
  }
  return VaultNatsController;
}
