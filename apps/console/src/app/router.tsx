import { useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from 'react';
import { hrefOf, routeOf, type Route } from './routes';

export { CONSOLE_BASE, INTERN_TABS, hrefOf, internRoute, routeOf, type InternTab, type Route } from './routes';

const listeners = new Set<() => void>();
function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  window.addEventListener('popstate', listener);
  return () => {
    listeners.delete(listener);
    window.removeEventListener('popstate', listener);
  };
}

export function navigate(route: Route): void {
  window.history.pushState(null, '', hrefOf(route));
  for (const listener of listeners) listener();
  window.scrollTo(0, 0);
}

export function useRoute(): Route {
  const pathname = useSyncExternalStore(subscribe, () => window.location.pathname);
  return routeOf(pathname);
}

/** A link to a page of the console: a real href (opens in a new tab, is announced as a link), navigated in place. */
export function Link({ to, children, ...rest }: { to: Route } & Omit<AnchorHTMLAttributes<HTMLAnchorElement>, 'href'>) {
  const onClick = (event: MouseEvent<HTMLAnchorElement>) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return (
    <a {...rest} href={hrefOf(to)} onClick={onClick}>
      {children}
    </a>
  );
}
