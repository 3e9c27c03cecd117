// console/: serving the web console's build at `/console/`; the browser app itself is apps/console.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The console's entry page; every client route answers it (the SPA fallback). */
export const CONSOLE_INDEX = 'index.html';
/** Vite writes every hashed file here, so only these may be cached for good. */
export const CONSOLE_ASSETS_DIR = 'assets/';

/** How often a missing build is looked for again (a `vite build` after the gateway started). */
const RESCAN_INTERVAL_MS = 2000;

/** The media types a Vite build holds; anything else is sent as bytes (and, with nosniff, never run). */
const MEDIA_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/** One built file, held in memory with its validator. */
export interface ConsoleFile {
  bytes: Buffer;
  mediaType: string;
  /** Quoted SHA-256 of the bytes. */
  etag: string;
}

/** Where `npm run build` writes the console: `dist/console`, four levels above this file's place in `dist/apps/gateway/src/console/`. */
export function defaultConsoleDir(): string {
  return fileURLToPath(new URL('../../../../console/', import.meta.url));
}

/**
 * The console's built files (a handful, about a megabyte), read into memory once. A request is answered only when its
 * path is an exact key, so no request path ever reaches the filesystem (no `..`, no symlink, no dotfile). A missing
 * build (no index.html) is looked for again at most every RESCAN_INTERVAL_MS, so `npm run build` after the gateway
 * started is picked up; a rebuild over an existing one needs a restart (its hashed names change with it anyway).
 */
export class ConsoleBuild {
  private files: ReadonlyMap<string, ConsoleFile> | null = null;
  private lastScanAt = Number.NEGATIVE_INFINITY;
  private scanning: Promise<void> | null = null;

  constructor(readonly dir: string) {}

  /** The build's files by relative path, or null while there is no build. */
  async current(now = Date.now()): Promise<ReadonlyMap<string, ConsoleFile> | null> {
    if (this.files !== null) return this.files;
    if (this.scanning === null && now - this.lastScanAt >= RESCAN_INTERVAL_MS) {
      this.lastScanAt = now;
      this.scanning = readBuild(this.dir)
        .then((found) => {
          if (found.has(CONSOLE_INDEX)) this.files = found;
        })
        .finally(() => (this.scanning = null));
    }
    await this.scanning;
    return this.files;
  }
}

/** Regular files below `dir` by `/`-separated relative path, dotfiles left out; empty when the directory does not exist. */
async function readBuild(dir: string): Promise<Map<string, ConsoleFile>> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  const files = new Map<string, ConsoleFile>();
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const path = relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/');
    if (path.split('/').some((segment) => segment.startsWith('.'))) continue;
    const bytes = await readFile(join(dir, path));
    files.set(path, {
      bytes,
      mediaType: MEDIA_TYPES[extname(path)] ?? 'application/octet-stream',
      etag: `"${createHash('sha256').update(bytes).digest('hex')}"`,
    });
  }
  return files;
}
