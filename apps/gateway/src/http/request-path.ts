/**
 * The path of a request target without its query, percent-decoded (as the router matches it), for judging routes
 * before one matched; a malformed escape leaves the path as sent (the router answers such targets itself).
 */
export function decodedPathOf(url: string): string {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}
