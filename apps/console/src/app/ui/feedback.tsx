import type { ReactNode } from 'react';
import { messageOf } from '../api/api-error';

/** A failure, with the envelope's message; announced to screen readers. */
export function ErrorNote({ error, prefix }: { error: unknown; prefix?: string }) {
  if (error === null || error === undefined) return null;
  return (
    <p className="error-note" role="alert">
      {prefix === undefined ? null : `${prefix}: `}
      {messageOf(error)}
    </p>
  );
}

/** An empty list, saying what to do about it. */
export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="loading" role="status">
      Loading {what}…
    </p>
  );
}

/** A horizontally scrollable table region: focusable, so a keyboard user can scroll it at phone width. */
export function TableScroll({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="table-scroll" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}
