import type { IdentityStore } from '@interns/identity';
import { parseFlags, requireUuidFlag } from './command-args';

export interface ChatappInstalledOptions {
  workspaceId: string;
}

export interface ChatappInstalledOutput {
  workspace_id: string;
  chatapp_installed_at: string;
}

export function parseChatappInstalledArgs(args: string[]): ChatappInstalledOptions {
  const { values } = parseFlags('chatapp-installed', args, { workspace: { type: 'string' } });
  return { workspaceId: requireUuidFlag('chatapp-installed', 'workspace', values.workspace) };
}

/** `chatapp-installed --workspace <uuid>`: records that the workspace's chat app is installed. */
export async function runChatappInstalled(
  options: ChatappInstalledOptions,
  store: IdentityStore,
): Promise<ChatappInstalledOutput> {
  const install = await store.recordChatappInstall(options.workspaceId);
  return { workspace_id: install.workspaceId, chatapp_installed_at: install.chatappInstalledAt };
}
