import { open, stat } from 'node:fs/promises';
import pg from 'pg';
import { Platform, PLATFORM_SERVICES } from '@interns/testing';
import { benchIdentities, sleep } from '../shared/bench-kit';
import { chatTurn, turnTarget } from './turn-client';

/**
 * Investigation aid (not a benchmark): which SQL statements one `/say hi` chat turn runs, in order, with
 * PostgreSQL's own durations. Turns `log_min_duration_statement = 0` on for the platform's own test database
 * only (ALTER DATABASE, then every service restarted so its pool reconnects with it), marks each turn with a
 * `SELECT 'turn N begins'` and prints the server log lines of that database between the marks.
 * Needs the server log readable at PG_LOG (default Debian's). Run: node dist/bench/chat-turn/trace-statements.js
 */
const PG_LOG = process.env.PG_LOG ?? '/var/log/postgresql/postgresql-15-main.log';
const USER_KEY = 'uk_bench_trace';
const IDENTITIES = benchIdentities({ workspaceId: '5eed0000-0000-4000-8000-000000000004', userKey: USER_KEY });
const TRACED_TURNS = Number(process.env.TRACED_TURNS ?? 2);

/**
 * One line per statement executed in the database tagged `tag` (parse and bind steps and parameters left out):
 * the log's time, the backend's pid, PostgreSQL's duration and the statement on one line.
 */
function printStatements(text: string, tag: string): void {
  const entries: string[] = [];
  for (const line of text.split('\n')) {
    if (/^\d{4}-\d\d-\d\d /.test(line)) entries.push(line);
    else if (entries.length > 0) entries[entries.length - 1] += ` ${line.trim()}`;
  }
  for (const entry of entries) {
    if (!entry.includes(tag)) continue;
    const match = /^\S+ (\S+) UTC \[(\d+)\] .*?LOG: {2}duration: ([\d.]+) ms {2}(?:statement|execute \S+): (.*)$/.exec(entry);
    if (match === null) continue;
    const [, time, pid, duration, statement] = match;
    process.stdout.write(`${time} [${pid}] ${Number(duration).toFixed(3).padStart(7)} ms  ${statement.replace(/\s+/g, ' ').slice(0, 150)}\n`);
  }
}

async function main(): Promise<void> {
  const platform = await Platform.start({ env: { CHAT_TURNS_PER_MINUTE: '1000000' } });
  const marker = new pg.Client({ connectionString: platform.database.url, application_name: 'trace-marker' });
  try {
    await platform.applyIdentities(IDENTITIES);
    const created = await platform.api<{ id: string }>('/api/v1/interns', {
      token: USER_KEY,
      json: { name: 'bench-trace', description: 'statement trace', provision: true },
    });
    const internId = created.body.id;
    for (let i = 0; i < 200; i += 1) {
      const got = await platform.api<{ status: string }>(`/api/v1/interns/${internId}`, { token: USER_KEY });
      if (got.body.status === 'running') break;
      await sleep(50);
    }
    const admin = new pg.Client({ connectionString: platform.database.url });
    await admin.connect();
    await admin.query(`ALTER DATABASE ${platform.database.name} SET log_min_duration_statement = 0`);
    await admin.end();
    for (const service of PLATFORM_SERVICES) {
      await platform.stopService(service);
      await platform.startService(service);
    }
    await marker.connect();
    const target = turnTarget('platform', `${platform.gatewayUrl}/api/v1/interns/${internId}/chat/completions`, {
      authorization: `Bearer ${USER_KEY}`,
    });
    const body = JSON.stringify({ stream: true, messages: [{ role: 'user', content: '/say hi' }] });
    for (let i = 0; i < 5; i += 1) await chatTurn(target, body, 'hi');
    await sleep(1000);
    const from = (await stat(PG_LOG)).size;
    for (let i = 1; i <= TRACED_TURNS; i += 1) {
      await marker.query(`SELECT 'turn ${i} begins'`);
      const timing = await chatTurn(target, body, 'hi');
      await marker.query(`SELECT 'turn ${i} [DONE] after ${(timing.doneAt - timing.sentAt).toFixed(2)} ms'`);
      await sleep(400);
    }
    await marker.query(`SELECT 'trace ends'`);
    await sleep(300);
    const file = await open(PG_LOG, 'r');
    const size = (await file.stat()).size;
    const buffer = Buffer.alloc(size - from);
    await file.read(buffer, 0, buffer.length, from);
    await file.close();
    printStatements(buffer.toString('utf8'), `@${platform.database.name} `);
  } finally {
    await marker.end().catch(() => undefined);
    await platform.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`trace failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
