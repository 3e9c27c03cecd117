import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { DomainError, type Principal, type RequestContext, type VaultScope } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { PostgresEventStore, type StoredEvent } from '@interns/event-store';
import { createTestDatabase, type TestDatabase } from '@interns/testing';
import { newVaultMasterKey, VaultSealer } from '@interns/vault';
import { LIFECYCLE_SCHEMA, lifecycleMigrations } from '../migrations';
import { VAULT_AUDIT_STREAM_TYPE, vaultAuditStreamId, VaultService } from './vault.service';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function alice(workspaceId: string): Principal {
  return {
    kind: 'user',
    organizationId: 'org-1',
    workspaceId,
    memberId: 'alice',
    keyId: 'key-alice',
    internId: null,
    scopes: [],
    chatappInstallRequired: false,
  };
}

/**
 * The vault's audit stream as the service writes it, on a database of its own (no service process): what each
 * write and delete records, and that writers racing on one vault's stream are each recorded once, or not at all
 * when their write fails.
 */
describe('VaultService: the audit of a vault', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let store: PostgresEventStore;
  let vault: VaultService;
  let keysDir: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({
      url: db.url,
      schema: LIFECYCLE_SCHEMA,
      migrations: lifecycleMigrations,
      applicationName: 'vault.int.spec',
      migrate: true,
    });
    keysDir = await mkdtemp(join(tmpdir(), 'vault-int-'));
    store = new PostgresEventStore(dataSource, { schema: LIFECYCLE_SCHEMA });
    const sealer = await VaultSealer.load({ masterKey: JSON.stringify(await newVaultMasterKey()), publicKey: null, keysDir, nodeEnv: 'production' });
    vault = new VaultService(dataSource, store, sealer);
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
    if (keysDir) await rm(keysDir, { recursive: true, force: true });
  });

  const contextOf = (workspaceId: string): RequestContext => ({ correlationId: randomUUID(), principal: alice(workspaceId) });
  const workspace: VaultScope = { kind: 'workspace' };
  const put = (context: RequestContext, name: string, value = `value of ${name}`, scope: VaultScope = workspace) =>
    vault.put({ context, scope, name, body: { value, hosts: ['api.example.com'] } });
  const remove = (context: RequestContext, name: string) => vault.delete({ context, scope: workspace, name });
  const auditOf = async (vaultId: string): Promise<StoredEvent[]> => (await store.readStream(vaultAuditStreamId(vaultId))).events;

  it('records each write and delete, in order: who, which vault and scope, the name and fingerprint, never the value', async () => {
    const workspaceId = randomUUID();
    const first = contextOf(workspaceId);
    const written = await put(first, 'github_token', 'ghp_first');
    const rewritten = await put(contextOf(workspaceId), 'github_token', 'ghp_second');
    const deleting = contextOf(workspaceId);
    await remove(deleting, 'github_token');

    const events = await auditOf(workspaceId);
    expect(events.map((event) => [event.type, event.streamType, event.streamVersion])).toEqual([
      ['VaultSecretWritten', VAULT_AUDIT_STREAM_TYPE, 1],
      ['VaultSecretWritten', VAULT_AUDIT_STREAM_TYPE, 2],
      ['VaultSecretDeleted', VAULT_AUDIT_STREAM_TYPE, 3],
    ]);
    const recorded = { scope: 'workspace', vaultId: workspaceId, workspaceId, internId: null, name: 'github_token', actor: 'member:alice' };
    expect(events[0].data).toEqual({ ...recorded, fingerprint: written.data.fingerprint, at: expect.stringMatching(ISO_UTC) });
    expect(events[1].data).toEqual({ ...recorded, fingerprint: rewritten.data.fingerprint, at: expect.stringMatching(ISO_UTC) });
    // The delete records the fingerprint of what it deleted.
    expect(events[2].data).toEqual({ ...recorded, fingerprint: rewritten.data.fingerprint, at: expect.stringMatching(ISO_UTC) });
    expect(written.data.fingerprint).not.toBe(rewritten.data.fingerprint);
    expect(events[0].metadata).toEqual({ correlation_id: first.correlationId, causation_id: null, actor: 'member:alice' });
    expect(events[2].metadata).toEqual({ correlation_id: deleting.correlationId, causation_id: null, actor: 'member:alice' });
    expect(JSON.stringify(events)).not.toMatch(/ghp_first|ghp_second/);
  });

  it("records a copy into an intern vault as one write per secret, in one transaction, with that vault's fingerprints", async () => {
    const workspaceId = randomUUID();
    const internId = randomUUID();
    const internVault = randomUUID();
    await dataSource.query(
      `INSERT INTO lifecycle.interns (id, organization_id, workspace_id, name, status, vault_id, created_at, updated_at, revision)
       VALUES ($1, 'org-1', $2, 'copier', 'running', $3, now(), now(), 1)`,
      [internId, workspaceId, internVault],
    );
    const originals = [await put(contextOf(workspaceId), 'one'), await put(contextOf(workspaceId), 'two')];
    const copying = contextOf(workspaceId);
    const { data: copies } = await vault.copy({ context: copying, internId, names: ['one', 'two'] });

    const events = await auditOf(internVault);
    expect(events.map((event) => [event.type, event.streamVersion, event.data.name])).toEqual([
      ['VaultSecretWritten', 1, 'one'],
      ['VaultSecretWritten', 2, 'two'],
    ]);
    expect(new Set(events.map((event) => event.transactionId)).size).toBe(1);
    events.forEach((event, index) => {
      expect(event.data).toEqual({
        scope: 'intern',
        vaultId: internVault,
        workspaceId,
        internId,
        name: copies[index].name,
        fingerprint: copies[index].fingerprint,
        actor: 'member:alice',
        at: events[0].data.at,
      });
      expect(event.metadata.correlation_id).toBe(copying.correlationId);
    });
    expect(copies.map((copy) => copy.fingerprint)).not.toEqual(originals.map((original) => original.data.fingerprint));
    // The workspace vault's audit holds its own two writes only.
    expect((await auditOf(workspaceId)).map((event) => event.data.name)).toEqual(['one', 'two']);
  });

  it('records every one of several writers racing on one vault, each once', async () => {
    const workspaceId = randomUUID();
    // Four writers: each can lose the race at most three times, within the command handler's five attempts.
    const names = ['alpha', 'beta', 'gamma', 'delta'];
    await Promise.all(names.map((name) => put(contextOf(workspaceId), name)));

    const events = await auditOf(workspaceId);
    expect(events.map((event) => event.streamVersion)).toEqual([1, 2, 3, 4]);
    expect(events.map((event) => event.data.name).sort()).toEqual([...names].sort());
    const { data } = await vault.list({ context: contextOf(workspaceId), scope: workspace, query: { limit: 10, offset: 0 } });
    expect(data.map((secret) => secret.name)).toEqual([...names].sort());
  });

  it('records a delete that lost its race to another delete of the same secret not at all', async () => {
    const workspaceId = randomUUID();
    await put(contextOf(workspaceId), 'shared');
    const outcomes = await Promise.allSettled([remove(contextOf(workspaceId), 'shared'), remove(contextOf(workspaceId), 'shared')]);

    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    const [lost] = outcomes.filter((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    expect(lost.reason).toBeInstanceOf(DomainError);
    expect((lost.reason as DomainError).reason).toBe('not_found');
    expect((await auditOf(workspaceId)).map((event) => event.type)).toEqual(['VaultSecretWritten', 'VaultSecretDeleted']);
  });
});
