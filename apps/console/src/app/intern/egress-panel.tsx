import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useState, type FormEvent } from 'react';
import { path } from '../api/client';
import type { EgressLogEntry, EgressPolicy, Page } from '../api/types';
import { useSession } from '../session';
import { Empty, ErrorNote, Loading, TableScroll } from '../ui/feedback';
import { formatBytes, formatTime, listFromText } from '../ui/format';
import { StatusBadge } from '../ui/status-badge';

const LOG_PAGE_SIZE = 50;

/** What the intern's commands may reach (interface section 19): the allow list, and what the egress proxy handled. */
export function EgressPanel({ internId }: { internId: string }) {
  return (
    <div className="stack">
      <h2>Egress</h2>
      <PolicyForm internId={internId} />
      <EgressLog internId={internId} />
    </div>
  );
}

function PolicyForm({ internId }: { internId: string }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const id = useId();
  const target = path`/interns/${internId}/egress`;
  const policy = useQuery({ queryKey: ['egress', internId], queryFn: ({ signal }) => client.json<EgressPolicy>(target, { signal }) });
  const [text, setText] = useState('');
  useEffect(() => {
    if (policy.data !== undefined) setText(policy.data.allow.join('\n'));
  }, [policy.data]);
  const save = useMutation({
    mutationFn: () => client.json<EgressPolicy>(target, { method: 'PUT', json: { allow: listFromText(text) } }),
    onSuccess: (saved) => queryClient.setQueryData(['egress', internId], saved),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };
  return (
    <form className="card stack" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>Allowed hosts</h3>
      {policy.isPending ? <Loading what="the policy" /> : null}
      <ErrorNote error={policy.error} />
      <label htmlFor={`${id}-allow`}>One host per line: an exact hostname, or *.domain for every subdomain</label>
      <textarea id={`${id}-allow`} rows={4} value={text} onChange={(event) => setText(event.target.value)} aria-describedby={`${id}-hint`} />
      <p id={`${id}-hint`} className="hint">
        Empty: the intern reaches only hosts its secrets are bound to. Private and platform addresses are always refused.
      </p>
      <ErrorNote error={save.error} />
      {save.isSuccess ? <p role="status" className="hint">Saved.</p> : null}
      <button type="submit" className="primary" disabled={save.isPending || policy.data === undefined}>
        Save allowed hosts
      </button>
    </form>
  );
}

function EgressLog({ internId }: { internId: string }) {
  const { client } = useSession();
  const log = useInfiniteQuery({
    queryKey: ['egress-log', internId],
    queryFn: ({ pageParam, signal }) =>
      client.json<Page<EgressLogEntry>>(
        `${path`/interns/${internId}/egress/log`}?limit=${LOG_PAGE_SIZE}${pageParam === null ? '' : `&starting_after=${encodeURIComponent(pageParam)}`}`,
        { signal },
      ),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => (last.has_more ? (last.next_cursor ?? null) : null),
  });
  const entries = log.data?.pages.flatMap((page) => page.data) ?? [];
  return (
    <section className="card stack" aria-labelledby="egress-log-title">
      <div className="section-head">
        <h3 id="egress-log-title">Requests the proxy handled</h3>
        <button type="button" onClick={() => void log.refetch()} disabled={log.isFetching}>
          Refresh
        </button>
      </div>
      {log.isPending ? <Loading what="the egress log" /> : null}
      <ErrorNote error={log.error} />
      {log.isSuccess && entries.length === 0 ? <Empty>No requests yet: what the intern's commands send out shows here.</Empty> : null}
      {entries.length > 0 ? (
        <TableScroll label="Egress log entries">
          <table>
            <thead>
              <tr>
                <th scope="col">At</th>
                <th scope="col">Host</th>
                <th scope="col">Request</th>
                <th scope="col">Decision</th>
                <th scope="col">Secrets</th>
                <th scope="col">Status</th>
                <th scope="col">Bytes out / in</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((entry) => (
                <tr key={entry.id}>
                  <td>{formatTime(entry.at)}</td>
                  <td>
                    {entry.host}:{entry.port}
                  </td>
                  <td>{entry.method === null ? 'tunnelled' : `${entry.method} ${entry.path ?? ''}`}</td>
                  <td>
                    <StatusBadge status={entry.decision} />
                    {entry.reason === null ? null : <span className="hint block">{entry.reason}</span>}
                  </td>
                  <td>{entry.secrets.length === 0 ? '—' : entry.secrets.join(', ')}</td>
                  <td>{entry.status ?? '—'}</td>
                  <td>
                    {formatBytes(entry.bytes_out)} / {formatBytes(entry.bytes_in)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      ) : null}
      {log.hasNextPage ? (
        <button type="button" onClick={() => void log.fetchNextPage()} disabled={log.isFetchingNextPage}>
          Show older requests
        </button>
      ) : null}
    </section>
  );
}
