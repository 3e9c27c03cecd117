/**
 * The gateway's end of a direct upload against a real HTTP server standing in for the runs side: a refusal answered
 * mid-body, on a connection the runs side then closes while the gateway is still sending (the workspace quota
 * reached partway through a large upload), reaches the caller as that refusal, never as a transfer that "ended on
 * the runs side". The runs side itself is apps/runs/src/files/direct-transfers.ts; the files e2e spec runs both.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { FILE_DIRECT_ERROR_HEADER } from '@interns/contracts';
import { RemoteServiceError } from '@interns/messaging';
import { DirectTransferClient } from './direct-transfer.client';

const REFUSAL = { kind: 'service_error', reason: 'limit_reached', message: 'the workspace quota is reached: nothing of the upload was kept' };
const REFUSE_AFTER_BYTES = 256 * 1024;
const UPLOAD_BYTES = 32 * 1024 * 1024;

let server: Server;
let url: string;

beforeAll(async () => {
  // As the runs side answers a refusal mid-upload: the service error payload, then the connection closed unread.
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let taken = 0;
    request.on('data', (piece: Buffer) => {
      taken += piece.length;
      if (taken <= REFUSE_AFTER_BYTES || response.headersSent) return;
      request.pause();
      const text = JSON.stringify(REFUSAL);
      response.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), [FILE_DIRECT_ERROR_HEADER]: '1', connection: 'close' });
      response.end(text);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/transfers/t`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A client's body far larger than the socket buffers, so the gateway is still sending when the refusal comes. */
function largeBody(): Readable {
  const piece = Buffer.alloc(64 * 1024, 7);
  let left = UPLOAD_BYTES / piece.length;
  return new Readable({
    read() {
      this.push(left-- > 0 ? piece : null);
    },
  });
}

it('reads the refusal the runs side answered mid-body, even once it closed the connection on the rest', async () => {
  const client = new DirectTransferClient(5_000);
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const upload = client.upload({ url, token: 'token' } as never, { stream: largeBody(), length: null }, UPLOAD_BYTES * 2);
    await expect(upload).rejects.toBeInstanceOf(RemoteServiceError);
    await expect(upload).rejects.toMatchObject({ payload: REFUSAL });
  }
});
