import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { AnalyticsAnswer } from '../api/types';
import { useSession } from '../session';
import { ErrorNote, Loading } from '../ui/feedback';
import { useTitle } from '../ui/use-title';
import { hourlySeries, last24Hours, total, type HourPoint } from './hourly-series';

const RUN_METRICS = ['run_count', 'tokens_prompt', 'tokens_completion'] as const;

/** Runs, tokens and failures per hour over the last 24 h (interface section 14), for a management key. */
export function AnalyticsPage() {
  useTitle('Analytics');
  const { client } = useSession();
  const [range] = useState(() => last24Hours(Date.now()));
  const query = (body: Record<string, unknown>) => (signal: AbortSignal) =>
    client.json<AnalyticsAnswer>('/analytics/query', { json: { granularity: 'hour', time_range: range, ...body }, signal });
  const runs = useQuery({
    queryKey: ['analytics', 'runs', range],
    queryFn: ({ signal }) => query({ metrics: RUN_METRICS })(signal),
  });
  const failures = useQuery({
    queryKey: ['analytics', 'failures', range],
    queryFn: ({ signal }) => query({ metrics: ['run_count'], filters: [{ field: 'finish_reason', operator: 'eq', value: 'error' }] })(signal),
  });
  const runPoints = runs.data === undefined ? null : hourlySeries(runs.data.data.data, RUN_METRICS, range);
  const failurePoints = failures.data === undefined ? null : hourlySeries(failures.data.data.data, ['run_count'], range);

  return (
    <div className="page stack">
      <h1>Analytics: the last 24 hours</h1>
      <p className="hint">Your organization's runs per hour, from {new Date(range.start).toLocaleString()} to now.</p>
      {runs.isPending || failures.isPending ? <Loading what="analytics" /> : null}
      <ErrorNote error={runs.error ?? failures.error} />
      {runPoints === null ? null : (
        <>
          <Chart
            title="Runs"
            summary={`${total(runPoints, 'run_count')} runs`}
            points={runPoints}
            bars={[{ key: 'run_count', name: 'Runs', color: '#1f5fbf' }]}
          />
          <Chart
            title="Tokens"
            summary={`${total(runPoints, 'tokens_prompt') + total(runPoints, 'tokens_completion')} tokens`}
            points={runPoints}
            bars={[
              { key: 'tokens_prompt', name: 'Prompt tokens', color: '#6a3d9a', stack: 'tokens' },
              { key: 'tokens_completion', name: 'Completion tokens', color: '#2e7d32', stack: 'tokens' },
            ]}
          />
        </>
      )}
      {failurePoints === null ? null : (
        <Chart
          title="Failures"
          summary={`${total(failurePoints, 'run_count')} runs ended in an error`}
          points={failurePoints}
          bars={[{ key: 'run_count', name: 'Failed runs', color: '#b3261e' }]}
        />
      )}
    </div>
  );
}

interface BarSpec {
  key: string;
  name: string;
  color: string;
  stack?: string;
}

function Chart({ title, summary, points, bars }: { title: string; summary: string; points: HourPoint[]; bars: BarSpec[] }) {
  const id = `chart-${title.toLowerCase()}`;
  return (
    <figure className="card chart" aria-labelledby={id} data-chart={title.toLowerCase()}>
      <figcaption id={id}>
        <strong>{title}</strong> per hour: {summary}
      </figcaption>
      <div className="chart-area">
        <ResponsiveContainer width="100%" height={240}>
          <BarChart data={points} margin={{ top: 8, right: 8, bottom: 8, left: 0 }} title={`${title} per hour`} desc={summary}>
            <CartesianGrid strokeDasharray="3 3" stroke="#d0d5dd" />
            <XAxis dataKey="hour" tick={{ fill: '#344054', fontSize: 12 }} interval="preserveStartEnd" />
            <YAxis allowDecimals={false} tick={{ fill: '#344054', fontSize: 12 }} width={48} />
            <Tooltip />
            {bars.length > 1 ? <Legend /> : null}
            {bars.map((bar) => (
              <Bar key={bar.key} dataKey={bar.key} name={bar.name} fill={bar.color} stackId={bar.stack} isAnimationActive={false} />
            ))}
          </BarChart>
        </ResponsiveContainer>
      </div>
    </figure>
  );
}
