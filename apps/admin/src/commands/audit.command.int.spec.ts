import { randomUUID } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { subjectsFor } from '@interns/contracts';
import { connectNats } from '@interns/messaging';
import { testNatsPrefix } from '@interns/testing';
import { runAdmin } from '../admin.cli';

const AUDITED = '2d2d2d2d-0000-4000-8000-0000000000a1';
const ENTRIES = [
  { kind: 'daemon_access', member_id: 'alice', at: '2025-01-01T00:00:00.000Z' },
  { kind: 'signing', member_id: 'bob', at: '2025-01-01T00:00:01.000Z' },
];

/** `admin audit` against a stand-in for lifecycle's daemon-audit query (NestJS packet format, real NATS). */
describe('admin audit', () => {
  const prefix = testNatsPrefix();
  const env = { NATS_URL: 'nats://127.0.0.1:4222', NATS_PREFIX: prefix };
  const asked: string[] = [];
  let nc: NatsConnection;

  const admin = async (...argv: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await runAdmin(argv, env, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
    return { code, stdout, stderr };
  };

  beforeAll(async () => {
    nc = await connectNats({ url: env.NATS_URL, name: 'admin-audit-spec-lifecycle' });
    nc.subscribe(subjectsFor(prefix).lifecycle.daemonAudit, {
      callback: (_error, msg) => {
        const packet = msg.json<{ id: string; data: { internId: string } }>();
        asked.push(packet.data.internId);
        const reply =
          packet.data.internId === AUDITED
            ? { id: packet.id, isDisposed: true, response: { data: ENTRIES } }
            : { id: packet.id, isDisposed: true, err: { kind: 'service_error', reason: 'not_found', message: 'intern not found' } };
        msg.respond(JSON.stringify(reply));
      },
    });
    await nc.flush();
  });

  afterAll(async () => {
    await nc.close();
  });

  it('prints the recorded reveals and signings as lifecycle lists them', async () => {
    const run = await admin('audit', '--intern', AUDITED.toUpperCase());
    expect(run).toEqual({ code: 0, stdout: `${JSON.stringify({ data: ENTRIES })}\n`, stderr: '' });
    expect(asked).toEqual([AUDITED]);
  });

  it('reports an unknown intern, bad flags and a missing lifecycle service on stderr with exit 1', async () => {
    const unknown = randomUUID();
    expect(await admin('audit', '--intern', unknown)).toEqual({ code: 1, stdout: '', stderr: `error: intern ${unknown} not found\n` });
    expect(await admin('audit')).toEqual({ code: 1, stdout: '', stderr: 'error: audit: missing --intern <uuid>\n' });
    expect(await admin('audit', '--intern', 'x')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'error: audit: --intern must be a uuid, got "x"\n',
    });
    let stderr = '';
    const code = await runAdmin(['audit', '--intern', AUDITED], { ...env, NATS_PREFIX: testNatsPrefix() }, {
      stdout: () => undefined,
      stderr: (t) => (stderr += t),
    });
    expect({ code, stderr }).toEqual({ code: 1, stderr: 'error: lifecycle service is not running\n' });
  });
});
