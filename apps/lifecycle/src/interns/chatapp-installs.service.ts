// interns/: intern use cases (create/update, provision/suspend/delete, queries, the read model) and chat-app installs.
import type { DataSource } from 'typeorm';
import {
  DomainError,
  isUuid,
  Principal,
  RecordChatappInstallReply,
  RecordChatappInstallRequest,
} from '@interns/contracts';
import { eventMetadata } from '@interns/event-store';
import type { InternStreams } from './intern-streams';

const OVERLOOKED_AFTER_MS = 5_000;

/**
 * Chat-app installs per workspace (recorded by the admin command) and the interns waiting for them in
 * `awaiting_chatapp_install`.
 */
export class ChatappInstallsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly streams: InternStreams,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Whether a provision by this principal has to wait for the workspace's chat-app install. */
  async installPending(principal: Principal): Promise<boolean> {
    if (!principal.chatappInstallRequired) return false;
    const rows: unknown[] = await this.dataSource.query(
      `SELECT 1 FROM lifecycle.chatapp_installs WHERE workspace_id = $1`,
      [principal.workspaceId],
    );
    return rows.length === 0;
  }

  /** Records the install (idempotent) and releases every intern of the workspace waiting for it. */
  async record(request: RecordChatappInstallRequest): Promise<RecordChatappInstallReply> {
    if (!isUuid(request.workspaceId)) throw new DomainError('invalid_body', 'workspaceId must be a uuid');
    const workspaceId = request.workspaceId.toLowerCase();
    await this.dataSource.query(
      `INSERT INTO lifecycle.chatapp_installs (workspace_id, recorded_at) VALUES ($1, now())
       ON CONFLICT (workspace_id) DO NOTHING`,
      [workspaceId],
    );
    const waiting: { id: string }[] = await this.dataSource.query(
      `SELECT id FROM lifecycle.interns WHERE workspace_id = $1 AND status = 'awaiting_chatapp_install'`,
      [workspaceId],
    );
    let released = 0;
    for (const { id } of waiting) {
      if (await this.release(id, request.correlationId)) released += 1;
    }
    return { workspaceId, released };
  }

  /**
   * Interns still waiting although their workspace's install was recorded a while ago: a provision that read
   * "not installed" just before the install committed, or a release cut short by a crash. The process manager
   * sweeps these up; the grace period leaves fresh installs to `record`, which reports what it released.
   */
  async overlooked(): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(
      `SELECT i.id FROM lifecycle.interns i JOIN lifecycle.chatapp_installs c ON c.workspace_id = i.workspace_id
        WHERE i.status = 'awaiting_chatapp_install' AND c.recorded_at < now() - $1::int * interval '1 millisecond'`,
      [OVERLOOKED_AFTER_MS],
    );
    return rows.map((row) => row.id);
  }

  async release(internId: string, correlationId: string): Promise<boolean> {
    try {
      const produced = await this.streams.execute(
        internId,
        () => ({ type: 'RecordChatappInstall', data: { at: this.now().toISOString() } }),
        eventMetadata({ correlationId, actor: null }),
      );
      return produced.length > 0;
    } catch (error) {
      // Torn down meanwhile: nothing waits any more.
      if (error instanceof DomainError && error.reason === 'not_found') return false;
      throw error;
    }
  }
}
