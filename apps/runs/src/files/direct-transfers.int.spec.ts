/**
 * The runs side of a direct file transfer on a real port: who may connect (the one-use token of the open reply,
 * refused when wrong, reused or expired without touching the transfer), and bodies both ways. The sandbox's reader
 * and writer stand in as plain streams here; the files e2e spec moves real files through the real sandbox.
 */
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { PassThrough } from 'node:stream';
import { DomainError, type DirectTransfer, type FileWriteResult } from '@interns/contracts';
import { DirectTransfers } from './direct-transfers';
import type { FileDownload, FileUpload } from './workspace-files';

const TTL_MS = 300;
let transfers: DirectTransfers;

beforeEach(async () => {
  transfers = new DirectTransfers({ host: '127.0.0.1', port: 0, advertisedHost: '127.0.0.1', stallMs: 2_000, tokenTtlMs: TTL_MS });
  await transfers.listen();
});

afterEach(async () => {
  await transfers.close();
});

/** A file being read, whose reader is the given bytes; records whether it was aborted. */
function fakeDownload(bytes: Buffer) {
  const stream = new PassThrough();
  const state = { aborted: false, finished: false };
  const download: FileDownload = {
    size: bytes.length,
    etag: '"x"',
    stream,
    finish: async () => {
      state.finished = true;
    },
    abort: () => {
      state.aborted = true;
      stream.destroy();
    },
  };
  return { download, state, feed: () => stream.end(bytes) };
}

/** An upload that keeps what it is given; records how it ended. */
function fakeUpload() {
  const state = { chunks: [] as Buffer[], ended: false, aborted: false };
  const upload: FileUpload = {
    write: async (chunk) => {
      state.chunks.push(Buffer.from(chunk));
    },
    end: async (): Promise<FileWriteResult> => {
      state.ended = true;
      const size = state.chunks.reduce((sum, chunk) => sum + chunk.length, 0);
      return { created: true, entry: { name: 'f', type: 'file', size, modified_at: '2026-11-27T00:00:00.000Z' } };
    },
    abort: async () => {
      state.aborted = true;
    },
  };
  return { upload, state };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function call(method: string, direct: DirectTransfer, token: string, body?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(direct.url, { method, headers: { authorization: `Bearer ${token}` }, agent: false }, (answer) => {
      const parts: Buffer[] = [];
      answer.on('data', (part: Buffer) => parts.push(part));
      answer.on('end', () => resolve({ status: answer.statusCode ?? 0, headers: answer.headers, body: Buffer.concat(parts) }));
      answer.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it('sends a download to the bearer of its token, once: the file\'s bytes with their length, then 404 to a second use', async () => {
  const bytes = randomBytes(3 * 1024 * 1024 + 17);
  const { download, state, feed } = fakeDownload(bytes);
  let done = 0;
  const { transferId, direct } = transfers.offerDownload(download, () => done++);
  expect(direct.url).toBe(`http://127.0.0.1:${new URL(direct.url).port}/files/transfers/${transferId}`);
  expect(Buffer.from(direct.token, 'base64url')).toHaveLength(32);
  feed();
  const answer = await call('GET', direct, direct.token);
  expect([answer.status, answer.body.equals(bytes), state.finished, state.aborted, done]).toEqual([200, true, true, false, 1]);
  expect((await call('GET', direct, direct.token)).status).toBe(404);
});

it('takes an upload\'s body and answers what was written', async () => {
  const bytes = randomBytes(2 * 1024 * 1024 + 5);
  const { upload, state } = fakeUpload();
  let done = 0;
  const { direct } = transfers.offerUpload(upload, () => done++);
  const answer = await call('PUT', direct, direct.token, bytes);
  expect(answer.status).toBe(200);
  expect((JSON.parse(answer.body.toString('utf8')) as FileWriteResult).entry.size).toBe(bytes.length);
  expect([Buffer.concat(state.chunks).equals(bytes), state.ended, state.aborted, done]).toEqual([true, true, false, 1]);
});

it('refuses a wrong token with 401 and leaves the transfer to its own token; another method or id is 404', async () => {
  const { upload, state } = fakeUpload();
  const { transferId, direct } = transfers.offerUpload(upload, () => undefined);
  const wrong = randomBytes(32).toString('base64url');
  expect((await call('PUT', direct, wrong, Buffer.from('planted'))).status).toBe(401);
  expect((await call('PUT', direct, direct.token.slice(0, -2), Buffer.from('planted'))).status).toBe(401);
  expect((await call('PUT', { ...direct, url: direct.url.replace(transferId, 'other') }, direct.token, Buffer.from('x'))).status).toBe(404);
  expect((await call('GET', direct, direct.token)).status).toBe(404);
  expect([state.chunks, state.ended, state.aborted]).toEqual([[], false, false]);
  expect((await call('PUT', direct, direct.token, Buffer.from('mine'))).status).toBe(200);
  expect(Buffer.concat(state.chunks).toString()).toBe('mine');
});

it('gives a transfer up when its connection does not come in time: the token is then 404 and the reader killed', async () => {
  const { download, state } = fakeDownload(Buffer.from('late'));
  let done = 0;
  const { direct } = transfers.offerDownload(download, () => done++);
  await sleep(TTL_MS + 200);
  expect([state.aborted, done]).toEqual([true, 1]);
  expect((await call('GET', direct, direct.token)).status).toBe(404);
});

it('aborts an upload whose sender leaves mid-body, and does not end it', async () => {
  const { upload, state } = fakeUpload();
  let done = 0;
  const { direct } = transfers.offerUpload(upload, () => done++);
  await new Promise<void>((resolve) => {
    const outgoing = httpRequest(direct.url, { method: 'PUT', headers: { authorization: `Bearer ${direct.token}`, 'content-length': '1000000' }, agent: false });
    outgoing.on('error', () => undefined);
    outgoing.write(randomBytes(1000), () => setTimeout(() => (outgoing.destroy(), resolve()), 100));
  });
  const deadline = Date.now() + 2_000;
  while (!state.aborted && Date.now() < deadline) await sleep(20);
  expect([state.aborted, state.ended, done]).toEqual([true, false, 1]);
});

it('answers a refusal, whole body read or not, as the service error payload the gateway passes on', async () => {
  const { upload, state } = fakeUpload();
  upload.end = async () => {
    throw new DomainError('invalid_body', 'the path names a directory');
  };
  const { direct } = transfers.offerUpload(upload, () => undefined);
  const answer = await call('PUT', direct, direct.token, Buffer.from('x'));
  expect([answer.status, answer.headers['files-error']]).toEqual([400, '1']);
  expect(JSON.parse(answer.body.toString('utf8'))).toEqual({ kind: 'service_error', reason: 'invalid_body', message: 'the path names a directory' });
  expect(state.aborted).toBe(true);
});
