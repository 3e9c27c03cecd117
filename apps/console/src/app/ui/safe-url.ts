/** The only schemes a link in untrusted text may have: no `javascript:`, `data:`, `vbscript:`, `file:` or relative URL. */
const LINK_SCHEMES: ReadonlySet<string> = new Set(['http:', 'https:', 'mailto:']);

/**
 * A URL from model or tool output, kept only when it is absolute with an allowed scheme (as the URL parser reads it,
 * so `JaVaScRiPt:`, leading spaces or tabs inside the scheme cannot slip by); anything else becomes null and the link
 * is shown as plain text.
 */
export function safeLinkUrl(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    return null;
  }
  return LINK_SCHEMES.has(parsed.protocol) ? parsed.href : null;
}
