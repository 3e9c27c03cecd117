import type { InternIconReply } from '@interns/contracts';

/** A URL that names the icon's hash (`?v=<icon_sha256>`) can never change meaning: cache it for a year. */
export const IMMUTABLE_ICON_CACHE = 'private, max-age=31536000, immutable';
/**
 * Without that version the same URL serves a new icon if the intern's icon ever changes, so clients keep
 * a copy but revalidate it with `If-None-Match` on every use (a 304 costs no image bytes).
 */
export const REVALIDATED_ICON_CACHE = 'private, no-cache';

export interface IconAnswer {
  status: 200 | 304;
  headers: Record<string, string>;
  /** The PNG bytes; undefined on 304, which carries no body. */
  body: Buffer | undefined;
}

/**
 * The HTTP answer for an intern's icon (CONTRACT section 4): the PNG with `ETag` = the quoted SHA-256,
 * the cache policy chosen by the `v` query parameter, and 304 when `If-None-Match` names that ETag.
 */
export function iconAnswer(icon: InternIconReply, version: unknown, ifNoneMatch: string | undefined): IconAnswer {
  const etag = `"${icon.sha256}"`;
  const cacheControl = version === icon.sha256 ? IMMUTABLE_ICON_CACHE : REVALIDATED_ICON_CACHE;
  const headers = { etag, 'cache-control': cacheControl };
  if (etagListMatches(ifNoneMatch, etag)) return { status: 304, headers, body: undefined };
  return {
    status: 200,
    headers: { ...headers, 'content-type': 'image/png' },
    body: Buffer.from(icon.pngBase64, 'base64'),
  };
}

/** `If-None-Match` uses the weak comparison (RFC 9110 13.1.2): `W/"x"` matches `"x"`; `*` matches any. */
export function etagListMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((candidate) => {
    const tag = candidate.trim();
    return (tag.startsWith('W/') ? tag.slice(2) : tag) === etag;
  });
}
