import { useEffect } from 'react';

/** The document title names the page (screen readers announce it; tabs and history show it). */
export function useTitle(page: string): void {
  useEffect(() => {
    document.title = `${page} · Interns console`;
  }, [page]);
}
