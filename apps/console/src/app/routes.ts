/** Where the console is served; every page is a path below it, so a reload asks the gateway for index.html. */
export const CONSOLE_BASE = '/console/';

export const INTERN_TABS = ['chat', 'runs', 'questions', 'files', 'vault', 'egress'] as const;
export type InternTab = (typeof INTERN_TABS)[number];

export type Route =
  | { page: 'interns' }
  | { page: 'intern'; internId: string; tab: InternTab; runId: string | null }
  | { page: 'webhooks' }
  | { page: 'analytics' }
  | { page: 'not-found' };

/** The page a path names (the path below CONSOLE_BASE, without its query). */
export function routeOf(pathname: string): Route {
  const parts = pathname.startsWith(CONSOLE_BASE) ? pathname.slice(CONSOLE_BASE.length).split('/').filter(Boolean) : [];
  const [first, internId, tab, runId] = parts.map((part) => decodeURIComponent(part));
  if (first === undefined) return { page: 'interns' };
  if (first === 'webhooks' && parts.length === 1) return { page: 'webhooks' };
  if (first === 'analytics' && parts.length === 1) return { page: 'analytics' };
  if (first === 'interns' && internId !== undefined) {
    const known = (INTERN_TABS as readonly string[]).includes(tab ?? 'chat');
    if (known && parts.length <= 4) return { page: 'intern', internId, tab: (tab ?? 'chat') as InternTab, runId: runId ?? null };
  }
  return { page: 'not-found' };
}

export function hrefOf(route: Route): string {
  switch (route.page) {
    case 'interns':
    case 'not-found':
      return CONSOLE_BASE;
    case 'webhooks':
    case 'analytics':
      return `${CONSOLE_BASE}${route.page}`;
    case 'intern': {
      const run = route.runId === null ? '' : `/${encodeURIComponent(route.runId)}`;
      return `${CONSOLE_BASE}interns/${encodeURIComponent(route.internId)}/${route.tab}${run}`;
    }
  }
}

export const internRoute = (internId: string, tab: InternTab = 'chat', runId: string | null = null): Route => ({ page: 'intern', internId, tab, runId });

