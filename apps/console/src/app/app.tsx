import { useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useEffect, useMemo, useState } from 'react';
import { ApiClient } from './api/client';
import { clearSignedIn, readSignedIn, writeSignedIn, type SignedIn } from './api/credential-store';
import { followLiveEvents, type LiveStatus } from './api/live-events';
import { InternPage } from './intern/intern-page';
import { InternsPage } from './interns/interns-page';
import { applyLiveEvent, refreshAfterResume } from './interns/live-updates';
import { internRoute, Link, navigate, useRoute, type Route } from './router';
import { SessionContext, useSession, type Session } from './session';
import { SignIn } from './sign-in';
import { Empty, Loading } from './ui/feedback';
import { WebhooksPage } from './webhooks/webhooks-page';

/** Its own chunk (Recharts is most of the bundle): loaded only when a management key opens it. */
const AnalyticsPage = lazy(() => import('./analytics/analytics-page').then((module) => ({ default: module.AnalyticsPage })));

export function App() {
  const [signedIn, setSignedIn] = useState<SignedIn | null>(readSignedIn);
  const queryClient = useQueryClient();
  if (signedIn === null) {
    return (
      <SignIn
        onSignedIn={(next) => {
          writeSignedIn(next);
          setSignedIn(next);
        }}
      />
    );
  }
  const signOut = () => {
    clearSignedIn();
    queryClient.clear();
    setSignedIn(null);
    navigate({ page: 'interns' });
  };
  return <SignedInConsole key={signedIn.credential} signedIn={signedIn} signOut={signOut} />;
}

function SignedInConsole({ signedIn, signOut }: { signedIn: SignedIn; signOut(): void }) {
  const client = useMemo(() => new ApiClient(signedIn.credential), [signedIn.credential]);
  const [live, setLive] = useState<Session['live']>({ status: 'connecting' });
  const queryClient = useQueryClient();

  useEffect(() => {
    // A management key sees no intern events: the analytics page asks when it is shown.
    if (signedIn.kind === 'management') return;
    const stop = new AbortController();
    void followLiveEvents(
      client,
      {
        onEvent: (event) => applyLiveEvent(queryClient, event),
        onStatus: (status: LiveStatus, detail?: string) => setLive({ status, detail }),
        onResumed: () => refreshAfterResume(queryClient),
      },
      stop.signal,
    );
    return () => stop.abort();
  }, [client, queryClient, signedIn.kind]);

  const session: Session = { signedIn, client, live, signOut };
  return (
    <SessionContext.Provider value={session}>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <Header />
      <main id="main" tabIndex={-1}>
        <Page />
      </main>
    </SessionContext.Provider>
  );
}

function Header() {
  const route = useRoute();
  const { signedIn, live, signOut } = useSession();
  const links: { to: Route; label: string; current: boolean }[] = [];
  if (signedIn.kind === 'workspace') {
    links.push({ to: { page: 'interns' }, label: 'Interns', current: route.page === 'interns' || route.page === 'intern' });
    links.push({ to: { page: 'webhooks' }, label: 'Webhooks', current: route.page === 'webhooks' });
  }
  if (signedIn.kind === 'intern' && signedIn.internId !== undefined) {
    links.push({ to: internRoute(signedIn.internId), label: 'Intern', current: true });
  }
  if (signedIn.kind === 'management') links.push({ to: { page: 'analytics' }, label: 'Analytics', current: true });
  return (
    <header className="top-bar">
      <span className="brand">Interns console</span>
      <nav aria-label="Main">
        <ul>
          {links.map((link) => (
            <li key={link.label}>
              <Link to={link.to} aria-current={link.current ? 'page' : undefined}>
                {link.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      {signedIn.kind === 'management' ? null : <LiveIndicator status={live.status} detail={live.detail} />}
      <button type="button" onClick={signOut}>
        Sign out
      </button>
    </header>
  );
}

const LIVE_LABELS: Record<LiveStatus, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
  unavailable: 'Live updates unavailable',
};

function LiveIndicator({ status, detail }: { status: LiveStatus; detail?: string }) {
  return (
    <span className={`live live-${status}`} role="status" title={detail}>
      {LIVE_LABELS[status]}
      {status === 'unavailable' && detail !== undefined ? <span className="visually-hidden">: {detail}</span> : null}
    </span>
  );
}

function Page() {
  const route = useRoute();
  const { signedIn } = useSession();
  if (signedIn.kind === 'management') {
    return (
      <Suspense fallback={<Loading what="analytics" />}>
        <AnalyticsPage />
      </Suspense>
    );
  }
  if (signedIn.kind === 'intern') {
    const internId = signedIn.internId ?? '';
    const tab = route.page === 'intern' && route.internId === internId ? route.tab : 'chat';
    const runId = route.page === 'intern' ? route.runId : null;
    return <InternPage internId={internId} tab={tab} runId={runId} />;
  }
  switch (route.page) {
    case 'interns':
      return <InternsPage />;
    case 'intern':
      return <InternPage internId={route.internId} tab={route.tab} runId={route.runId} />;
    case 'webhooks':
      return <WebhooksPage />;
    case 'analytics':
      return <Empty>Analytics are for management keys: sign out and sign in with one to see the charts.</Empty>;
    case 'not-found':
      return (
        <Empty>
          No such page. <Link to={{ page: 'interns' }}>Go to the interns</Link>.
        </Empty>
      );
  }
}
