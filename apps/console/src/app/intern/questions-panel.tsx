import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { path } from '../api/client';
import type { OpenQuestion } from '../api/types';
import { queryKeys } from '../interns/live-updates';
import { internRoute, Link } from '../router';
import { useSession } from '../session';
import { Empty, ErrorNote, Loading } from '../ui/feedback';
import { QuestionCard } from './question-card';

/** The open questions of runs this credential sees, oldest first (interface section 12), each answered in place. */
export function QuestionsPanel({ internId }: { internId: string }) {
  const { client } = useSession();
  const questions = useQuery({
    queryKey: queryKeys.questions(internId),
    queryFn: ({ signal }) => client.json<{ data: OpenQuestion[] }>(path`/interns/${internId}/questions`, { signal }),
  });
  const [answered, setAnswered] = useState<string[]>([]);
  const open = questions.data?.data ?? [];
  return (
    <div className="stack">
      <h2>Questions waiting for an answer</h2>
      {questions.isPending ? <Loading what="questions" /> : null}
      <ErrorNote error={questions.error} />
      {answered.length === 0 ? null : (
        <p role="status" className="hint">
          Answered; the run goes on: <Link to={internRoute(internId, 'runs', answered.at(-1) ?? null)}>follow it under Runs</Link>.
        </p>
      )}
      {questions.isSuccess && open.length === 0 ? (
        <Empty>No open questions. A run started with manual approval (or one that asks) waits here until it is answered.</Empty>
      ) : null}
      <ul className="question-list">
        {open.map((question) => (
          <li key={question.tool_call_id}>
            <InboxQuestion internId={internId} question={question} onAnswered={() => setAnswered((all) => [...all, question.run_id])} />
          </li>
        ))}
      </ul>
    </div>
  );
}

function InboxQuestion({ internId, question, onAnswered }: { internId: string; question: OpenQuestion; onAnswered(): void }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const answer = useMutation({
    mutationFn: (content: string) =>
      client.json(path`/interns/${internId}/runs/${question.run_id}/answer`, { json: { tool_call_id: question.tool_call_id, content } }),
    onSuccess: () => {
      onAnswered();
      void queryClient.invalidateQueries({ queryKey: queryKeys.questions(internId) });
      void queryClient.invalidateQueries({ queryKey: queryKeys.runs(internId) });
    },
  });
  return (
    <QuestionCard
      question={question.arguments}
      expiresAt={question.expires_at}
      busy={answer.isPending || answer.isSuccess}
      error={answer.error}
      onAnswer={(content) => answer.mutate(content)}
    />
  );
}
