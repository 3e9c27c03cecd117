import { useQuery } from '@tanstack/react-query';
import { path } from '../api/client';
import type { Intern } from '../api/types';
import { InternActions } from '../interns/intern-actions';
import { queryKeys } from '../interns/live-updates';
import { ProgressBar } from '../interns/progress-bar';
import { INTERN_TABS, internRoute, Link, type InternTab } from '../router';
import { useSession } from '../session';
import { ErrorNote, Loading } from '../ui/feedback';
import { StatusBadge } from '../ui/status-badge';
import { useTitle } from '../ui/use-title';
import { ChatPanel } from './chat-panel';
import { EgressPanel } from './egress-panel';
import { FilesPanel } from './files-panel';
import { QuestionsPanel } from './questions-panel';
import { RunsPanel } from './runs-panel';
import { VaultPanel } from './vault-panel';

const TAB_LABELS: Record<InternTab, string> = {
  chat: 'Chat',
  runs: 'Runs',
  questions: 'Questions',
  files: 'Files',
  vault: 'Vault',
  egress: 'Egress',
};

/** One intern: its state and actions, then one section at a time (each its own URL, so reload and back work). */
export function InternPage({ internId, tab, runId }: { internId: string; tab: InternTab; runId: string | null }) {
  const { client, signedIn } = useSession();
  const intern = useQuery({
    queryKey: queryKeys.intern(internId),
    queryFn: ({ signal }) => client.json<Intern>(path`/interns/${internId}`, { signal }),
  });
  const name = intern.data?.name ?? 'Intern';
  useTitle(`${name} · ${TAB_LABELS[tab]}`);
  // Vault and egress writes are closed to intern keys (404 and 403); the sections would only show refusals.
  const tabs = signedIn.kind === 'intern' ? INTERN_TABS.filter((each) => each !== 'vault') : INTERN_TABS;

  return (
    <div className="page stack">
      {intern.isPending ? <Loading what="the intern" /> : null}
      <ErrorNote error={intern.error} />
      {intern.data === undefined ? null : <InternHeader intern={intern.data} />}
      <nav aria-label="Intern sections" className="tabs">
        <ul>
          {tabs.map((each) => (
            <li key={each}>
              <Link to={internRoute(internId, each)} aria-current={each === tab ? 'page' : undefined}>
                {TAB_LABELS[each]}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <section aria-label={TAB_LABELS[tab]} className="panel">
        {tab === 'chat' ? <ChatPanel internId={internId} status={intern.data?.status ?? null} /> : null}
        {tab === 'runs' ? <RunsPanel internId={internId} selectedRunId={runId} /> : null}
        {tab === 'questions' ? <QuestionsPanel internId={internId} /> : null}
        {tab === 'files' ? <FilesPanel internId={internId} /> : null}
        {tab === 'vault' ? <VaultPanel internId={internId} /> : null}
        {tab === 'egress' ? <EgressPanel internId={internId} /> : null}
      </section>
    </div>
  );
}

function InternHeader({ intern }: { intern: Intern }) {
  const { signedIn } = useSession();
  return (
    <div className="intern-header">
      <div>
        <h1>{intern.name}</h1>
        {intern.description === null ? null : <p>{intern.description}</p>}
        <p className="meta">
          <StatusBadge status={intern.status} /> <span>model {intern.model ?? 'workspace default'}</span>
          {intern.hostname === null ? null : <span> · {intern.hostname}</span>}
        </p>
        {intern.progress === null ? null : <ProgressBar progress={intern.progress} name={intern.name} />}
        {intern.last_failure_message === null ? null : <p className="failure">Last failure: {intern.last_failure_message}</p>}
      </div>
      {signedIn.kind === 'workspace' ? <InternActions intern={intern} afterDelete="list" /> : null}
    </div>
  );
}
