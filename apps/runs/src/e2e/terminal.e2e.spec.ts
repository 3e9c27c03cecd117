/**
 * End to end: a terminal at the door (interface section 20, `GET /api/terminal`) through the real gateway, runs and
 * the intern's bubblewrap sandbox, over a real WebSocket and a real pseudo-terminal: who the shell is, where, its
 * terminal and size, every process gone when the socket closes, the per-intern cap, the audit, suspend, and the
 * refusals answered in the envelope before any switch of protocol.
 */
import { execFileSync } from 'node:child_process';
import { Platform } from '@interns/testing';
import {
  API,
  attachTerminal,
  createRunningIntern,
  doorOf as doorWith,
  IDENTITIES,
  KEYS,
  oauthToken,
  terminalRefusal,
  type Door,
  type TerminalSession as Session,
} from '@interns/testing/e2e';

const TERMINALS_PER_INTERN = 2;

let platform: Platform;
let oauth: string;
const doorOf = (internId: string) => doorWith(platform, internId, oauth);
const attach = (door: Door, query = '') => attachTerminal(platform, door, query);
const refusal = (door: Door, query = '') => terminalRefusal(platform, door, query);
const interns = { main: '', capped: '', suspended: '' };

/** Processes of a host uid (the sandbox's PID namespace is below ours; pgrep only reads). */
function processesOf(uid: number): string {
  try {
    return execFileSync('pgrep', ['-u', String(uid), '-l'], { encoding: 'utf8' });
  } catch {
    return '';
  }
}

beforeAll(async () => {
  platform = await Platform.start({ env: { TERMINALS_PER_INTERN: String(TERMINALS_PER_INTERN) } });
  await platform.applyIdentities(IDENTITIES);
  oauth = await oauthToken(platform, 'interns vault:read');
  [interns.main, interns.capped, interns.suspended] = await Promise.all([1, 2, 3].map(() => createRunningIntern(platform, KEYS.alice, 60_000)));
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

it("is a login shell as the intern's own uid in its workspace, with TERM, the size asked for, resize, and job control", async () => {
  const session = await attach(await doorOf(interns.main), '?cols=100&rows=30');
  session.socket.send(Buffer.from('echo "uid=$(id -u) home=$HOME pwd=$(pwd) term=$TERM size=$(stty size)"\r'));
  await session.until(/uid=(\d+) home=\/workspace pwd=\/workspace term=xterm-256color size=30 100/);
  const uid = Number(/uid=(\d+) /.exec(session.text())?.[1]);
  expect(uid).toBeGreaterThan(0);
  session.socket.send(JSON.stringify({ type: 'resize', cols: 132, rows: 43 }));
  session.socket.send(Buffer.from('echo "resized=$(stty size)"\r'));
  await session.until('resized=43 132');
  // Ctrl-C reaches the foreground job: the pseudo-terminal is the shell's controlling terminal.
  session.socket.send(Buffer.from('sleep 30\r'));
  await new Promise((done) => setTimeout(done, 300));
  session.socket.send(Buffer.from('\x03'));
  session.socket.send(Buffer.from('echo "after=$?"\r'));
  await session.until('after=130');

  // Closing the socket ends the shell and everything it started.
  session.socket.send(Buffer.from('sleep 1000 & echo "bg=$!"\r'));
  await session.until(/bg=\d+/);
  expect(processesOf(uid)).toContain('sleep');
  session.socket.close();
  const deadline = Date.now() + 10_000;
  while (processesOf(uid) !== '' && Date.now() < deadline) await new Promise((done) => setTimeout(done, 100));
  expect(processesOf(uid)).toBe('');
}, 60_000);

it('closes normally when the shell exits, and records each attach and detach in the audit', async () => {
  const session = await attach(await doorOf(interns.main));
  session.socket.send(Buffer.from('exit\r'));
  expect(await session.closed).toEqual({ code: 1000, reason: 'exited' });
  const { data } = await platform.admin<{ data: { kind: string; member_id: string }[] }>('audit', '--intern', interns.main);
  const terminalEntries = data.filter((entry) => entry.kind.startsWith('terminal_'));
  expect(terminalEntries.map((entry) => entry.kind)).toEqual(['terminal_attached', 'terminal_detached', 'terminal_attached', 'terminal_detached']);
  expect(new Set(terminalEntries.map((entry) => entry.member_id))).toEqual(new Set(['alice']));
}, 30_000);

it('holds at most TERMINALS_PER_INTERN at once (409 limit_reached), and a closed one makes room', async () => {
  const door = await doorOf(interns.capped);
  const held = [await attach(door), await attach(door)];
  const over = await refusal(door);
  expect(over).toEqual({ status: 409, body: { error: { code: 409, message: expect.any(String), metadata: { reason: 'limit_reached', retryable: false } } } });
  held[0].socket.close();
  await held[0].closed;
  // The socket's close ends the terminal on runs just after: room appears within moments.
  let again: Session | null = null;
  for (const deadline = Date.now() + 10_000; again === null && Date.now() < deadline; ) {
    again = await attach(door).catch(async (error: { status?: number }) => {
      if (error.status !== 409) throw error;
      await new Promise((done) => setTimeout(done, 100));
      return null;
    });
  }
  if (again === null) throw new Error('no room within 10 s of a close');
  for (const session of [held[1], again]) session.socket.close();
}, 30_000);

it('refuses before the switch, in the envelope: no token, a bad size; and ends every terminal on suspend', async () => {
  const door = await doorOf(interns.suspended);
  expect(await refusal({ ...door, token: 'not-a-daemon-token-at-all' })).toEqual({ status: 401, body: { error: { code: 401, message: 'invalid or missing API key' } } });
  expect((await refusal(door, '?cols=0')).status).toBe(400);
  expect((await refusal(door, '?rows=abc')).status).toBe(400);
  const session = await attach(door);
  expect((await platform.api(`${API}/interns/${interns.suspended}/suspend`, { method: 'POST', token: KEYS.alice })).status).toBe(200);
  expect(await session.closed).toEqual({ code: 4000, reason: 'intern_suspended' });
  // Its token ended with the suspend: a new attach is told why.
  expect((await refusal(door)).status).toBe(409);
}, 60_000);
