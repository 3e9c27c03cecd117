import { useInfiniteQuery, useMutation, useQueryClient } from '@tanstack/react-query';
import { path } from '../api/client';
import type { Page, Run } from '../api/types';
import { queryKeys } from '../interns/live-updates';
import { internRoute, Link } from '../router';
import { useSession } from '../session';
import { Empty, ErrorNote, Loading, TableScroll } from '../ui/feedback';
import { formatTime } from '../ui/format';
import { StatusBadge } from '../ui/status-badge';
import { RunReplay } from './run-replay';

const PAGE_SIZE = 20;
const ACTIVE = new Set(['running', 'awaiting_input']);

/** The intern's runs visible to this credential, newest first; one run's replay when one is chosen. */
export function RunsPanel({ internId, selectedRunId }: { internId: string; selectedRunId: string | null }) {
  const { client } = useSession();
  const runs = useInfiniteQuery({
    queryKey: queryKeys.runs(internId),
    queryFn: ({ pageParam, signal }) =>
      client.json<Page<Run>>(
        `${path`/interns/${internId}/runs`}?limit=${PAGE_SIZE}${pageParam === null ? '' : `&starting_after=${encodeURIComponent(pageParam)}`}`,
        { signal },
      ),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => (last.has_more ? (last.next_cursor ?? null) : null),
  });
  const list = runs.data?.pages.flatMap((page) => page.data) ?? [];

  return (
    <div className="stack">
      <h2>Runs</h2>
      {selectedRunId === null ? null : <RunReplay key={selectedRunId} internId={internId} runId={selectedRunId} />}
      {runs.isPending ? <Loading what="runs" /> : null}
      <ErrorNote error={runs.error} />
      {runs.isSuccess && list.length === 0 ? <Empty>No runs yet: start one from Chat (or with invoke); it shows here.</Empty> : null}
      {list.length > 0 ? (
        <TableScroll label="Run list">
          <table>
            <thead>
              <tr>
                <th scope="col">Started</th>
                <th scope="col">Origin</th>
                <th scope="col">Status</th>
                <th scope="col">Finish</th>
                <th scope="col">Tokens</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.map((run) => (
                <RunRow key={run.id} internId={internId} run={run} selected={run.id === selectedRunId} />
              ))}
            </tbody>
          </table>
        </TableScroll>
      ) : null}
      {runs.hasNextPage ? (
        <button type="button" onClick={() => void runs.fetchNextPage()} disabled={runs.isFetchingNextPage}>
          Show more runs
        </button>
      ) : null}
    </div>
  );
}

function RunRow({ internId, run, selected }: { internId: string; run: Run; selected: boolean }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const cancel = useMutation({
    mutationFn: () => client.json(path`/interns/${internId}/runs/${run.id}/cancel`, { method: 'POST' }),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: queryKeys.runs(internId) }),
  });
  const started = formatTime(run.created_at);
  return (
    <tr aria-current={selected ? 'true' : undefined} className={selected ? 'selected' : undefined}>
      <td>{started}</td>
      <td>{run.origin}</td>
      <td>
        <StatusBadge status={run.status} />
      </td>
      <td>{run.finish_reason ?? '—'}</td>
      <td>{run.usage?.total_tokens ?? '—'}</td>
      <td>
        <div className="row-actions">
          <Link to={internRoute(internId, 'runs', run.id)} aria-label={`Replay the run started ${started}`}>
            Replay
          </Link>
          {ACTIVE.has(run.status) ? (
            <button type="button" onClick={() => cancel.mutate()} disabled={cancel.isPending} aria-label={`Cancel the run started ${started}`}>
              Cancel
            </button>
          ) : null}
        </div>
        <ErrorNote error={cancel.error} />
      </td>
    </tr>
  );
}
