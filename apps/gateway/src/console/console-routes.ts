import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { apiError, sendHttpError } from '../http/http-errors';
import { etagListMatches } from '../interns/intern-icon.reply';
import { decodedPathOf } from '../http/request-path';
import { CONSOLE_ASSETS_DIR, CONSOLE_INDEX, type ConsoleBuild, type ConsoleFile } from './console-build';

/** Where the console is served (interface section 23); its API calls go to `/api/v1` on the same origin. */
export const CONSOLE_PATH = '/console/';

/**
 * The console's Content-Security-Policy: its own scripts, styles and API only; no inline script or style element, no
 * framing, no `<base>`, no plugin. React and Recharts set styles through the CSSOM, which `style-src` does not govern,
 * so no hash or nonce is needed. `img-src data:` is for inline SVG data images only; no remote image loads.
 */
export const CONSOLE_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "style-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

/** On every answer under `/console`, the envelope's refusals included. */
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONSOLE_CONTENT_SECURITY_POLICY,
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cross-origin-opener-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
};

/** Hashed files never change under their name; everything else (index.html) is revalidated on every load. */
const IMMUTABLE_CACHE = 'public, max-age=31536000, immutable';
const REVALIDATE_CACHE = 'no-cache';

/**
 * Serves the console's built files at `/console/` on the gateway: static, no credential (the files hold no data; the
 * console asks the API with the credential the user signs in with). A known file is sent as it is; a path whose last
 * segment has no dot is a client route and gets index.html; anything else is 404 in the envelope, as is every path
 * while there is no build (a gateway started without `npm run build`). GET only (Fastify adds HEAD).
 */
export function registerConsoleRoutes(fastify: FastifyInstance, build: ConsoleBuild): void {
  fastify.get(CONSOLE_PATH.slice(0, -1), async (_request, reply) => {
    reply.headers(CONSOLE_SECURITY_HEADERS);
    return reply.redirect(CONSOLE_PATH, 308);
  });
  fastify.get(`${CONSOLE_PATH}*`, (request, reply) => serveConsole(request, reply, build));
}

async function serveConsole(request: FastifyRequest, reply: FastifyReply, build: ConsoleBuild): Promise<FastifyReply> {
  reply.headers(CONSOLE_SECURITY_HEADERS);
  const files = await build.current();
  if (files === null) {
    return sendHttpError(reply, apiError('not_found', 'the console is not built: run `npm run build` (it builds the console into dist/console)'));
  }
  const path = decodedPathOf(request.url).slice(CONSOLE_PATH.length);
  const file = files.get(path);
  if (file !== undefined) return sendFile(request, reply, file, path.startsWith(CONSOLE_ASSETS_DIR) ? IMMUTABLE_CACHE : REVALIDATE_CACHE);
  const index = files.get(CONSOLE_INDEX);
  if (index !== undefined && isClientRoute(path)) return sendFile(request, reply, index, REVALIDATE_CACHE);
  return sendHttpError(reply, apiError('not_found', 'the console has no such file'));
}

function sendFile(request: FastifyRequest, reply: FastifyReply, file: ConsoleFile, cacheControl: string): FastifyReply {
  reply.headers({ 'cache-control': cacheControl, etag: file.etag });
  if (etagListMatches(request.headers['if-none-match'], file.etag)) return reply.code(304).send();
  return reply.type(file.mediaType).send(file.bytes);
}

/** `interns/<id>/chat` is a page of the console; `assets/x.js` or `robots.txt` is a file, and missing. */
function isClientRoute(path: string): boolean {
  if (path.startsWith(CONSOLE_ASSETS_DIR)) return false;
  return !path.slice(path.lastIndexOf('/') + 1).includes('.');
}
