// chat/: chat and invoke requests over NATS (steer the intern's live run or start one); the run itself is in runs/.
import type { ChatReply, ChatRequest, InvokeReply, InvokeRequest, Subjects } from '@interns/contracts';
import type { LeanNatsHandler } from '@interns/messaging';
import type { TurnsService } from './turns.service';

/**
 * Chat and invoke requests from the gateway, served by any replica (queue group `runs`) on the lean path: a chat
 * turn waits on this handler before its first chunk, so it skips Nest's per-message pipeline (docs/architecture.md,
 * "The chat turn's fast path"). Its work logs and asks lifecycle, so it runs inside the request's context.
 */
export function chatLeanHandlers(subjects: Subjects['runs'], turns: TurnsService): LeanNatsHandler<never>[] {
  const chat: LeanNatsHandler<ChatRequest, ChatReply> = {
    subject: subjects.chat,
    entersRequestContext: true,
    handle: (request) => turns.chat(request),
  };
  const invoke: LeanNatsHandler<InvokeRequest, InvokeReply> = {
    subject: subjects.invoke,
    entersRequestContext: true,
    handle: (request) => turns.invoke(request),
  };
  return [chat, invoke];
}
