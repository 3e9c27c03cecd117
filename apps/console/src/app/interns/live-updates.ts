import type { InfiniteData, QueryClient } from '@tanstack/react-query';
import type { LiveEvent } from '../api/live-events';
import type { Intern, InternStatus, Page, Progress } from '../api/types';

/** The query keys the console's pages read; live events update or invalidate exactly these. */
export const queryKeys = {
  interns: ['interns'] as const,
  intern: (id: string) => ['intern', id] as const,
  runs: (id: string) => ['runs', id] as const,
  questions: (id: string) => ['questions', id] as const,
};

const KNOWN_STATUSES: ReadonlySet<string> = new Set<InternStatus>([
  'stopped',
  'queued',
  'awaiting_chatapp_install',
  'provisioning',
  'running',
  'failed',
  'destroying',
  'destroy_failed',
]);

/** Statuses whose `last_failure_message` or `hostname` the event does not carry: the intern is read again once. */
const READ_AGAIN: ReadonlySet<string> = new Set(['failed', 'destroy_failed', 'running']);

function patched(intern: Intern, status: InternStatus, progress: Progress | null): Intern {
  return { ...intern, status, progress };
}

/**
 * One event from `GET /api/v1/events` into the cache: a status change is written into the list and the intern's own
 * query at once (the progress bar moves with no request); what the event does not carry is read again.
 */
export function applyLiveEvent(queryClient: QueryClient, event: LiveEvent): void {
  const internId = typeof event.data.intern_id === 'string' ? event.data.intern_id : null;
  if (internId === null) return;
  switch (event.type) {
    case 'intern.status_changed': {
      const status = String(event.data.status);
      const progress = (event.data.progress ?? null) as Progress | null;
      if (!KNOWN_STATUSES.has(status)) {
        // Gone (torn down) or a status this console does not know: the lists are read again.
        void queryClient.invalidateQueries({ queryKey: queryKeys.interns });
        void queryClient.invalidateQueries({ queryKey: queryKeys.intern(internId) });
        return;
      }
      let listed = false;
      queryClient.setQueryData<InfiniteData<Page<Intern>>>(queryKeys.interns, (list) => {
        if (list === undefined) return list;
        return {
          ...list,
          pages: list.pages.map((page) => ({
            ...page,
            data: page.data.map((intern) => {
              if (intern.id !== internId) return intern;
              listed = true;
              return patched(intern, status as InternStatus, progress);
            }),
          })),
        };
      });
      queryClient.setQueryData<Intern>(queryKeys.intern(internId), (intern) => (intern === undefined ? intern : patched(intern, status as InternStatus, progress)));
      if (!listed || READ_AGAIN.has(status)) {
        void queryClient.invalidateQueries({ queryKey: queryKeys.interns });
        void queryClient.invalidateQueries({ queryKey: queryKeys.intern(internId) });
      }
      return;
    }
    case 'intern.created':
    case 'intern.updated':
      void queryClient.invalidateQueries({ queryKey: queryKeys.interns });
      void queryClient.invalidateQueries({ queryKey: queryKeys.intern(internId) });
      return;
    case 'intern.deleted':
      // Torn down: gone from the list at once; its own page reads again (and shows the 404's message).
      queryClient.setQueryData<InfiniteData<Page<Intern>>>(queryKeys.interns, (list) =>
        list === undefined ? list : { ...list, pages: list.pages.map((page) => ({ ...page, data: page.data.filter((intern) => intern.id !== internId) })) },
      );
      void queryClient.invalidateQueries({ queryKey: queryKeys.intern(internId) });
      return;
    default:
      // run.*, question.*: the intern's runs and open questions are read again.
      if (event.type.startsWith('run.') || event.type.startsWith('question.')) {
        void queryClient.invalidateQueries({ queryKey: queryKeys.runs(internId) });
        void queryClient.invalidateQueries({ queryKey: queryKeys.questions(internId) });
      }
      return;
  }
}

/** After a reconnection whose missed events may be past the replay window: everything shown is read again once. */
export function refreshAfterResume(queryClient: QueryClient): void {
  void queryClient.invalidateQueries();
}
