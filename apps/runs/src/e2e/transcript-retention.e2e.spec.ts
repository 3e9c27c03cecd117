/**
 * End to end: transcript retention (CONTRACT section 22, issue 23) through the real gateway, runs service and
 * sandbox. A marker typed into chat as `/shell echo <marker>` lands in the prompt, the tool call, the tool result,
 * the output and the run's chunks; asked in `manual` mode, in the question too (its integration event and its
 * webhook delivery). Deleting the intern purges what runs keeps before its teardown completes, and webhooks purges
 * its deliveries' questions as the deletion reaches it: then no row of any table of any schema, and no message of
 * any JetStream stream of the system, holds the marker. With a short
 * TRANSCRIPT_RETENTION_MS an ended run's transcript goes by itself, while the run still answers its metadata and
 * the intern chats on in the same session.
 */
import { randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { Platform } from '@interns/testing';
import {
  API,
  asJson,
  createRunningIntern,
  eventually,
  followRun,
  IDENTITIES,
  KEYS,
  prompt,
  query,
  readStream,
  refusal,
  runOf,
  runPath,
} from '@interns/testing/e2e';

/** Short enough to watch the sweep, long enough to see the transcript stored before it goes. */
const SHORT_RETENTION_MS = 5_000;

const markerOf = () => `MARKER-${randomUUID()}`;

/** Every row of every table of every schema of the platform's database that holds `text` (each row cast to text). */
async function rowsHolding(platform: Platform, text: string): Promise<string[]> {
  const tables = await query<{ schema: string; name: string }>(
    platform,
    `SELECT table_schema AS schema, table_name AS name FROM information_schema.tables
      WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`,
  );
  const found: string[] = [];
  for (const table of tables) {
    const rows = await query<{ row: string }>(
      platform,
      `SELECT t::text AS row FROM "${table.schema}"."${table.name}" t WHERE strpos(t::text, $1) > 0`,
      [text],
    );
    found.push(...rows.map(({ row }) => `${table.schema}.${table.name}: ${row}`));
  }
  return found;
}

/** Every message of every JetStream stream of the platform (its NATS_PREFIX) that holds `text`. */
async function messagesHolding(platform: Platform, text: string): Promise<string[]> {
  const nc = await connect({ servers: platform.env.NATS_URL });
  try {
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    const streamPrefix = `${platform.env.NATS_PREFIX.replace(/[^A-Za-z0-9_-]/g, '_')}_`;
    const found: string[] = [];
    for await (const name of jsm.streams.names()) {
      if (!name.startsWith(streamPrefix)) continue;
      const { state } = await jsm.streams.info(name);
      if (state.messages === 0) continue;
      const consumer = await js.consumers.get(name);
      const messages = await consumer.fetch({ max_messages: state.messages, expires: 5_000 });
      for await (const message of messages) {
        if (message.string().includes(text)) found.push(`${name} #${message.seq} ${message.subject}`);
        if (message.info.pending === 0) break;
      }
    }
    return found;
  } finally {
    await nc.close();
  }
}

async function storedAnywhere(platform: Platform, text: string): Promise<string[]> {
  return [...(await rowsHolding(platform, text)), ...(await messagesHolding(platform, text))];
}

/** Chats `/shell echo <marker>`: the marker is in the prompt, the command, its result and the output. */
/** Chats `/shell echo <marker>` in `manual` mode: the run asks for permission, quoting the command, and waits. */
async function askMarker(platform: Platform, internId: string, marker: string): Promise<void> {
  const summary = await readStream(await prompt(platform, internId, `/shell echo ${marker}`, { approvalMode: 'manual' }), 30_000);
  expect(summary.finishReason).toBe('tool_calls');
  expect(JSON.stringify(summary.toolCall?.arguments)).toContain(marker);
}

async function chatMarker(platform: Platform, internId: string, marker: string, sessionId?: string) {
  const stream = await prompt(platform, internId, `/shell echo ${marker}`, { sessionId });
  const runId = stream.headers['x-run-id'] as string;
  const summary = await readStream(stream, 30_000);
  expect(summary.finishReason).toBe('stop');
  expect(summary.content).toContain(marker);
  return { runId, sessionId: summary.sessionId };
}

describe('a deleted intern', () => {
  let platform: Platform;

  beforeAll(async () => {
    // The webhook endpoint below points at a closed local port: its deliveries are recorded and fail, which is all
    // this test needs of them.
    platform = await Platform.start({ env: { CHAT_TURNS_PER_MINUTE: '1000', WEBHOOK_ALLOW_INSECURE: 'true' } });
    await platform.applyIdentities(IDENTITIES);
  }, 60_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it('leaves no row of the database and no stored chunk holding what was said to it, once its teardown completed', async () => {
    const endpoint = await platform.api(`${API}/webhooks`, { token: KEYS.alice, json: { url: 'http://127.0.0.1:9/hook', events: ['question.opened'] } });
    expect(endpoint.status).toBe(201);
    const internId = await createRunningIntern(platform, KEYS.alice, 60_000);
    const marker = markerOf();
    const { runId } = await chatMarker(platform, internId, marker);
    await askMarker(platform, internId, marker);
    // Stored while the intern lives: its sessions' events, its runs' chunks, the question's event and delivery.
    const stored = await eventually(
      () => storedAnywhere(platform, marker),
      (where) => where.some((row) => row.startsWith('webhooks.deliveries:')),
      10_000,
    );
    expect(stored.some((where) => where.startsWith('runs.events:'))).toBe(true);
    expect(stored.some((where) => where.includes('_run_chunks #'))).toBe(true);
    expect(stored.some((where) => where.includes('_runs_events #'))).toBe(true);

    const deleted = await platform.api(`${API}/interns/${internId}`, { method: 'DELETE', token: KEYS.alice });
    expect(deleted.status).toBe(202);
    await eventually(
      () => platform.api(`${API}/interns/${internId}`, { token: KEYS.alice }),
      (got) => got.status === 404,
      60_000,
    );

    // What runs keeps is purged by the teardown's last step, so nothing of it is left the moment the teardown completed.
    expect((await storedAnywhere(platform, marker)).filter((where) => !where.startsWith('webhooks.'))).toEqual([]);
    // Webhooks purges its deliveries' questions as the intern's deletion reaches it; then nothing holds the marker.
    await eventually(
      () => storedAnywhere(platform, marker),
      (where) => where.length === 0,
      10_000,
    );
    // The run's metadata stays in the runs service (the intern, and so its runs, answer 404 to everyone).
    const [run] = await query<{ status: string; transcript_purged_at: Date | null }>(
      platform,
      'SELECT status, transcript_purged_at FROM runs.runs WHERE id = $1',
      [runId],
    );
    expect(run.status).toBe('completed');
    expect(run.transcript_purged_at).not.toBeNull();
  }, 120_000);
});

describe(`a run ended longer ago than TRANSCRIPT_RETENTION_MS (${SHORT_RETENTION_MS} ms)`, () => {
  let platform: Platform;

  beforeAll(async () => {
    platform = await Platform.start({ env: { CHAT_TURNS_PER_MINUTE: '1000', TRANSCRIPT_RETENTION_MS: String(SHORT_RETENTION_MS) } });
    await platform.applyIdentities(IDENTITIES);
  }, 60_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it('loses its transcript and chunks, keeps its metadata, and its intern chats on in the same session', async () => {
    const internId = await createRunningIntern(platform, KEYS.alice, 60_000);
    const marker = markerOf();
    const ended = await chatMarker(platform, internId, marker);
    const metadata = await runOf(platform, internId, ended.runId);
    expect(metadata).toMatchObject({ id: ended.runId, session_id: ended.sessionId, status: 'completed', finish_reason: 'stop' });
    expect((await storedAnywhere(platform, marker)).length).toBeGreaterThan(0);

    await eventually(
      () => storedAnywhere(platform, marker),
      (where) => where.length === 0,
      SHORT_RETENTION_MS + 30_000,
    );

    // The run's resource answers as before; its stream is gone with the transcript.
    expect(await runOf(platform, internId, ended.runId)).toEqual(metadata);
    const list = await platform.api(`${API}/interns/${internId}/runs`, { token: KEYS.alice });
    expect(list.body.data).toContainEqual(metadata);
    const replay = asJson(await followRun(platform, internId, ended.runId));
    expect({ status: replay.status, body: replay.body }).toEqual({ status: 410, body: refusal(410, 'run_expired') });

    // The session goes on after its purged run: a new run, whose transcript is kept until its own retention.
    const nextMarker = markerOf();
    const next = await chatMarker(platform, internId, nextMarker, ended.sessionId);
    expect(next.sessionId).toBe(ended.sessionId);
    expect(next.runId).not.toBe(ended.runId);
    expect((await platform.api(runPath(internId, next.runId), { token: KEYS.alice })).status).toBe(200);
  }, 120_000);
});
