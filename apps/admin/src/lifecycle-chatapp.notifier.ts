import { randomUUID } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { RecordChatappInstallReply, RecordChatappInstallRequest, subjectsFor } from '@interns/contracts';
import type { ChatappInstallNotifier } from './commands/chatapp-installed.command';
import { askLifecycle } from './lifecycle.rpc';

/** Tells the lifecycle service a workspace's chat-app install is recorded, so waiting interns go on. */
export function lifecycleChatappNotifier(nc: NatsConnection, natsPrefix: string): ChatappInstallNotifier {
  const subject = subjectsFor(natsPrefix).lifecycle.recordChatappInstall;
  return (workspaceId) => {
    const request: RecordChatappInstallRequest = { workspaceId, correlationId: `admin-${randomUUID()}` };
    return askLifecycle<RecordChatappInstallReply>(nc, subject, request);
  };
}
