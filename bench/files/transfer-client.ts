import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';

/**
 * The three ways the benchmark moves the same bytes, each timed from its first byte asked for to its last one
 * landed: up to an intern's workspace and down from it as a client with a file on disk would (curl -T, curl -o),
 * and a copy of that file beside itself.
 */

/** A file of an intern's workspace at the gateway: `path` is `/api/v1/interns/{id}/files/{file}`. */
export interface RemoteFile {
  port: number;
  path: string;
  userKey: string;
}

export interface Transfer {
  ms: number;
  status: number;
  /** The answer's body (JSON for an upload; empty for a download, whose body went to the file). */
  text: string;
}

function send(file: RemoteFile, method: 'PUT' | 'GET', headers: Record<string, string>, body: (outgoing: NodeJS.WritableStream) => Promise<void>, answer: (incoming: IncomingMessage) => Promise<string>): Promise<Transfer> {
  const startedAt = performance.now();
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      { host: '127.0.0.1', port: file.port, path: file.path, method, agent: false, headers: { host: 'localhost', authorization: `Bearer ${file.userKey}`, ...headers } },
      (incoming) => {
        answer(incoming).then((text) => resolve({ ms: performance.now() - startedAt, status: incoming.statusCode ?? 0, text }), reject);
      },
    );
    outgoing.on('error', reject);
    body(outgoing).catch(reject);
  });
}

async function readText(incoming: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** `PUT` of `source` (`size` bytes), streamed from disk with its Content-Length. */
export function upload(file: RemoteFile, source: string, size: number): Promise<Transfer> {
  return send(file, 'PUT', { 'content-type': 'application/octet-stream', 'content-length': String(size) }, (outgoing) => pipeline(createReadStream(source), outgoing), readText);
}

/** `GET` streamed into `destination`; a refusal's envelope is read instead. */
export function download(file: RemoteFile, destination: string): Promise<Transfer> {
  return send(
    file,
    'GET',
    {},
    async (outgoing) => void outgoing.end(),
    async (incoming) => {
      if (incoming.statusCode !== 200) return readText(incoming);
      await pipeline(incoming, createWriteStream(destination));
      return '';
    },
  );
}

/** `fs.copyFile` (what `cp` does: the kernel copies, no bytes through this process). */
export async function localCopy(source: string, destination: string): Promise<Transfer> {
  const startedAt = performance.now();
  await copyFile(source, destination);
  return { ms: performance.now() - startedAt, status: 0, text: '' };
}

/** A read stream piped into a write stream: the bytes through this process, as the client's ends of the transfers go. */
export async function streamedCopy(source: string, destination: string): Promise<Transfer> {
  const startedAt = performance.now();
  await pipeline(createReadStream(source), createWriteStream(destination));
  return { ms: performance.now() - startedAt, status: 0, text: '' };
}
