/**
 * A terminal client for end-to-end specs: the door's `GET /api/terminal` (interface section 20) over a real WebSocket,
 * reached on the gateway's port with the intern's hostname as `Host`, as a client resolving `*.localhost` would.
 */
import { WebSocket } from 'ws';
import type { Platform } from '../platform';
import { API } from './chat.fixture';

export interface Door {
  hostname: string;
  token: string;
}

/** The intern's door: its hostname and a daemon token revealed with an OAuth token (scope `interns vault:read`). */
export async function doorOf(platform: Platform, internId: string, oauthToken: string): Promise<Door> {
  const revealed = await platform.api(`${API}/interns/${internId}/daemon`, { token: oauthToken });
  if (revealed.status !== 200) throw new Error(`daemon access answered ${revealed.status}: ${revealed.text}`);
  const intern = await platform.api(`${API}/interns/${internId}`, { token: oauthToken });
  if (intern.status !== 200) throw new Error(`the intern answered ${intern.status}: ${intern.text}`);
  return { hostname: intern.body.hostname as string, token: (revealed.body as { token: string }).token };
}

/** An attached terminal: the socket, what it printed, and its ending. */
export interface TerminalSession {
  socket: WebSocket;
  text: () => string;
  until: (needle: string | RegExp, ms?: number) => Promise<void>;
  closed: Promise<{ code: number; reason: string }>;
}

/** Attaches; a refused upgrade rejects with its `status` and envelope `body`. */
export function attachTerminal(platform: Platform, door: Door, query = ''): Promise<TerminalSession> {
  const socket = new WebSocket(`${platform.gatewayUrl.replace('http', 'ws')}/api/terminal${query}`, {
    headers: { host: door.hostname, authorization: `Bearer ${door.token}` },
  });
  let text = '';
  socket.on('message', (data: Buffer) => (text += data.toString('utf8')));
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  return new Promise((resolve, reject) => {
    socket.once('open', () =>
      resolve({
        socket,
        text: () => text,
        closed,
        until: async (needle, ms = 10_000) => {
          const deadline = Date.now() + ms;
          while (!(typeof needle === 'string' ? text.includes(needle) : needle.test(text))) {
            if (Date.now() > deadline) throw new Error(`not seen within ${ms} ms: ${String(needle)}\n--- terminal ---\n${text}`);
            await new Promise((done) => setTimeout(done, 25));
          }
        },
      }),
    );
    socket.once('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => reject(Object.assign(new Error(`upgrade refused: ${response.statusCode}`), { status: response.statusCode, body: JSON.parse(body) })));
    });
    socket.once('error', reject);
  });
}

/** The refusal of an upgrade: its status and envelope (an upgrade that is not refused fails the spec). */
export async function terminalRefusal(platform: Platform, door: Door, query = ''): Promise<{ status: number; body: unknown }> {
  try {
    const session = await attachTerminal(platform, door, query);
    session.socket.close();
    throw new Error('the upgrade was not refused');
  } catch (error) {
    const { status, body } = error as { status?: number; body?: unknown };
    if (status === undefined) throw error;
    return { status, body };
  }
}
