import type { InternByHostnameReply, InternByHostnameRequest, Subjects } from '@interns/contracts';
import type { LeanNatsHandler } from '@interns/messaging';
import type { DoorService } from './door.service';

/**
 * The door's hostname lookup on the lean path: asked by the gateway for every door request its cache cannot answer,
 * so it skips Nest's per-message pipeline like get and list (docs/architecture.md, "The hot path").
 */
export function doorLeanHandlers(subjects: Subjects['lifecycle'], door: DoorService): LeanNatsHandler<never>[] {
  const byHostname: LeanNatsHandler<InternByHostnameRequest, InternByHostnameReply> = {
    subject: subjects.internByHostname,
    handle: (request) => door.internByHostname(request),
  };
  return [byHostname];
}
