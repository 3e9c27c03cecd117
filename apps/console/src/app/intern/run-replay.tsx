import { useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { applyStreamData, EMPTY_STREAM, type StreamState } from '../api/chat-stream';
import { path } from '../api/client';
import type { Run } from '../api/types';
import { readEventStream } from '../api/sse';
import { useSession } from '../session';
import { ErrorNote } from '../ui/feedback';
import { formatTime } from '../ui/format';
import { Markdown } from '../ui/markdown';
import { StatusBadge } from '../ui/status-badge';

/**
 * One run and its stream from the first chunk (interface section 12): what is stored is replayed, then followed live
 * until `[DONE]`. Closing this view never cancels the run.
 */
export function RunReplay({ internId, runId }: { internId: string; runId: string }) {
  const { client } = useSession();
  const run = useQuery({
    queryKey: ['run', internId, runId],
    queryFn: ({ signal }) => client.json<Run>(path`/interns/${internId}/runs/${runId}`, { signal }),
  });
  const [stream, setStream] = useState<StreamState>(EMPTY_STREAM);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    const controller = new AbortController();
    let current = EMPTY_STREAM;
    void (async () => {
      try {
        const response = await client.stream(path`/interns/${internId}/runs/${runId}/stream`, { signal: controller.signal });
        await readEventStream(response, (event) => {
          current = applyStreamData(current, event.data);
          setStream(current);
        });
        void run.refetch();
      } catch (failure) {
        if (!controller.signal.aborted) setError(failure);
      }
    })();
    return () => controller.abort();
    // The run's own query is refetched once the stream ends; it does not restart the stream.
  }, [client, internId, runId]);

  return (
    <article className="card stack run-replay" aria-labelledby="replay-title">
      <h3 id="replay-title">Run replay</h3>
      {run.data === undefined ? null : (
        <p className="meta">
          <StatusBadge status={run.data.status} /> {run.data.origin} · started {formatTime(run.data.created_at)}
          {run.data.ended_at === null ? '' : ` · ended ${formatTime(run.data.ended_at)}`}
        </p>
      )}
      <ErrorNote error={run.error} />
      <div className="bubble assistant" aria-busy={!stream.done && error === null}>
        {stream.text === '' ? <p className="hint">{stream.done ? 'The run streamed no text.' : 'Replaying…'}</p> : <Markdown text={stream.text} />}
      </div>
      {stream.asked.length === 0 ? null : (
        <ul className="asked">
          {stream.asked.map((question) => (
            <li key={question.toolCallId}>
              Asked: {question.arguments.kind === 'permission' ? `permission for ${question.arguments.operation}` : question.arguments.message}
            </li>
          ))}
        </ul>
      )}
      {stream.error === null ? null : <p className="error-note">{stream.error}</p>}
      <ErrorNote error={error} />
      <p role="status" className="hint">
        {stream.done ? `Replay complete${stream.finishReason === null ? '' : ` (finish: ${stream.finishReason})`}.` : ''}
      </p>
    </article>
  );
}
