import type { DataSource } from 'typeorm';
import { DeleteInternRequest, ProvisionInternRequest, RequestContext, SuspendInternRequest } from '@interns/contracts';
import { eventMetadata } from '@interns/event-store';
import type { InternCommand } from '@interns/lifecycle-domain';
import type { ChatappInstallsService } from './chatapp-installs.service';
import type { InternStreams } from './intern-streams';
import { visibleInternRow } from './visible-intern';

/**
 * Provision, suspend and delete: each records the request (CONTRACT section 5) and returns at once; the
 * process manager does the work step by step.
 */
export class InternTransitionsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly streams: InternStreams,
    private readonly installs: ChatappInstallsService,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async provision(request: ProvisionInternRequest): Promise<{ provisioning: true }> {
    const chatappInstallPending = await this.installs.installPending(request.context.principal);
    await this.run(request.internId, request.context, {
      type: 'RequestProvision',
      data: { chatappInstallPending, at: this.now().toISOString() },
    });
    return { provisioning: true };
  }

  async suspend(request: SuspendInternRequest): Promise<{ suspended: true }> {
    await this.run(request.internId, request.context, { type: 'SuspendIntern', data: { at: this.now().toISOString() } });
    return { suspended: true };
  }

  async delete(request: DeleteInternRequest): Promise<{ deleting: true }> {
    await this.run(request.internId, request.context, {
      type: 'RequestDeletion',
      data: { acknowledgeWorkspaceLoss: request.body?.acknowledge_workspace_loss === true, at: this.now().toISOString() },
    });
    return { deleting: true };
  }

  private async run(internId: string, context: RequestContext, command: InternCommand): Promise<void> {
    const row = await visibleInternRow(this.dataSource, internId, context.principal);
    await this.streams.execute(row.id, () => command, eventMetadata(context));
  }
}
