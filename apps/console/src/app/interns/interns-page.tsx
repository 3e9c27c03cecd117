import { useInfiniteQuery } from '@tanstack/react-query';
import type { Intern, Page } from '../api/types';
import { internRoute, Link } from '../router';
import { useSession } from '../session';
import { Empty, ErrorNote, Loading, TableScroll } from '../ui/feedback';
import { formatTime } from '../ui/format';
import { StatusBadge } from '../ui/status-badge';
import { useTitle } from '../ui/use-title';
import { CreateInternForm } from './create-intern-form';
import { InternActions } from './intern-actions';
import { queryKeys } from './live-updates';
import { ProgressBar } from './progress-bar';

const PAGE_SIZE = 50;

/** The workspace's interns, newest first, their status kept current by the live events (no polling). */
export function InternsPage() {
  useTitle('Interns');
  const { client } = useSession();
  const interns = useInfiniteQuery({
    queryKey: queryKeys.interns,
    queryFn: ({ pageParam, signal }) =>
      client.json<Page<Intern>>(`/interns?limit=${PAGE_SIZE}${pageParam === null ? '' : `&starting_after=${encodeURIComponent(pageParam)}`}`, { signal }),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => (last.has_more ? (last.next_cursor ?? null) : null),
  });
  const list = interns.data?.pages.flatMap((page) => page.data) ?? [];

  return (
    <div className="page stack">
      <h1>Interns</h1>
      <CreateInternForm />
      <section aria-labelledby="interns-title" className="stack">
        <h2 id="interns-title">Your interns</h2>
        {interns.isPending ? <Loading what="interns" /> : null}
        <ErrorNote error={interns.error} />
        {interns.isSuccess && list.length === 0 ? <Empty>No interns yet: create one with the form above, with “Provision it now” ticked to start it.</Empty> : null}
        {list.length > 0 ? (
          <TableScroll label="Intern list">
            <table className="interns-table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Status</th>
                  <th scope="col">Model</th>
                  <th scope="col">Created</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {list.map((intern) => (
                  <InternRow key={intern.id} intern={intern} />
                ))}
              </tbody>
            </table>
          </TableScroll>
        ) : null}
        {interns.hasNextPage ? (
          <button type="button" onClick={() => void interns.fetchNextPage()} disabled={interns.isFetchingNextPage}>
            {interns.isFetchingNextPage ? 'Loading…' : 'Show more interns'}
          </button>
        ) : null}
      </section>
    </div>
  );
}

function InternRow({ intern }: { intern: Intern }) {
  return (
    <tr data-intern={intern.name}>
      <th scope="row">
        <Link to={internRoute(intern.id)}>{intern.name}</Link>
        {intern.description === null ? null : <span className="hint block">{intern.description}</span>}
      </th>
      <td>
        <StatusBadge status={intern.status} />
        {intern.progress === null ? null : <ProgressBar progress={intern.progress} name={intern.name} />}
        {intern.last_failure_message === null ? null : <span className="failure block">{intern.last_failure_message}</span>}
      </td>
      <td>{intern.model ?? 'workspace default'}</td>
      <td>{formatTime(intern.created_at)}</td>
      <td>
        <InternActions intern={intern} />
      </td>
    </tr>
  );
}
