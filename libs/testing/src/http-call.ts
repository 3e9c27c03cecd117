import { request as httpRequest } from 'node:http';

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body as received (binary answers such as the icon). */
  bytes: Buffer;
  text: string;
  /** The parsed JSON body, or undefined when the body is not JSON. */
  json: unknown;
}

export interface HttpCall {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Send the body with `Transfer-Encoding: chunked` instead of a Content-Length. */
  chunked?: boolean;
}

/**
 * A plain node:http client for tests: full control over Host, Content-Type and framing, which fetch
 * does not give. A server may answer before it read the whole body (413) and close: write errors after
 * the answer arrived are ignored, and when the close reaches the client first (EPIPE, ECONNRESET, the
 * answer lost with the socket) the call is sent again, at most three times: that race is the transport's.
 */
export function call(port: number, path: string, options: HttpCall = {}): Promise<HttpAnswer> {
  return sendAgainOnEarlyClose(() => callOnce(port, path, options));
}

/** Runs `send` again (at most three times in all) when it failed because the server closed while the body was written. */
export async function sendAgainOnEarlyClose<T>(send: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await send();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (attempt >= 3 || (code !== 'EPIPE' && code !== 'ECONNRESET')) throw error;
    }
  }
}

function callOnce(port: number, path: string, options: HttpCall): Promise<HttpAnswer> {
  const headers: Record<string, string> = { host: 'localhost', ...(options.headers ?? {}) };
  if (options.body !== undefined && !options.chunked && headers['content-length'] === undefined) {
    headers['content-length'] = String(Buffer.byteLength(options.body));
  }
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers, agent: false },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const bytes = Buffer.concat(chunks);
          const text = bytes.toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes, text, json });
        });
      },
    );
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}
