import type { RecordChatappInstallReply } from '@interns/contracts';
import type { IdentityStore } from '@interns/identity';
import { parseFlags, requireUuidFlag } from './command-args';

export interface ChatappInstalledOptions {
  workspaceId: string;
}

export interface ChatappInstalledOutput {
  workspace_id: string;
  chatapp_installed_at: string;
  /** Interns that were waiting in `awaiting_chatapp_install` and are queued for provisioning now. */
  released_interns: number;
}

/** Tells the lifecycle service (which releases the interns waiting for the install). */
export type ChatappInstallNotifier = (workspaceId: string) => Promise<RecordChatappInstallReply>;

export function parseChatappInstalledArgs(args: string[]): ChatappInstalledOptions {
  const { values } = parseFlags('chatapp-installed', args, { workspace: { type: 'string' } });
  return { workspaceId: requireUuidFlag('chatapp-installed', 'workspace', values.workspace) };
}

/**
 * `chatapp-installed --workspace <uuid>`: records that the workspace's chat app is installed, in identity
 * (which knows the workspace; an unknown one fails here) and in lifecycle. Both are idempotent, so after a
 * failure running the command again completes it.
 */
export async function runChatappInstalled(
  options: ChatappInstalledOptions,
  store: IdentityStore,
  notifyLifecycle: ChatappInstallNotifier,
): Promise<ChatappInstalledOutput> {
  const install = await store.recordChatappInstall(options.workspaceId);
  const { released } = await notifyLifecycle(install.workspaceId);
  return { workspace_id: install.workspaceId, chatapp_installed_at: install.chatappInstalledAt, released_interns: released };
}
