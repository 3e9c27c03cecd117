import type { GetInternRequest, InternList, InternView, ListInternsRequest, Subjects } from '@interns/contracts';
import type { LeanNatsHandler } from '@interns/messaging';
import type { InternQueriesService } from './intern-queries.service';

/**
 * The hot reads, get and list, as lean NATS handlers: served without Nest's per-message pipeline, their
 * bodies written through by the gateway unparsed (docs/architecture.md, "The hot path").
 */
export function internsLeanHandlers(subjects: Subjects['lifecycle'], queries: InternQueriesService): LeanNatsHandler<never>[] {
  const get: LeanNatsHandler<GetInternRequest, InternView> = {
    subject: subjects.getIntern,
    handle: (request) => queries.get(request),
  };
  const list: LeanNatsHandler<ListInternsRequest, InternList> = {
    subject: subjects.listInterns,
    handle: (request) => queries.list(request),
  };
  return [get, list];
}
