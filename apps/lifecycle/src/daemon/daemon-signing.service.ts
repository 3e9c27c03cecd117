import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { INVOKE_HEADERS } from '@interns/contracts';
import type { DaemonSignReply, DaemonSignRequest, DaemonSigningKeysReply } from '@interns/contracts';
import { DaemonSigningKeyring, signingStringV1, signingStringV2 } from '@interns/daemon-signing';
import type { DaemonAuditLog } from './daemon-audit.log';
import { daemonCaller, lockRunningIntern } from './daemon-caller';

/**
 * Signs invoke requests for daemons with the keyring's current Ed25519 key; the JWKS also publishes the previous
 * key during a rotation. No private key leaves this service.
 */
export class DaemonSigningService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly audit: DaemonAuditLog,
    private readonly key: DaemonSigningKeyring,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** The body was checked by the gateway (CONTRACT check 6 precedes the checks here). */
  async sign(request: DaemonSignRequest): Promise<DaemonSignReply> {
    const { row, memberId } = await daemonCaller(this.dataSource, request.internId, request.context.principal, {
      vaultRead: true,
    });
    const at = this.now();
    // Recorded before anything is signed: a signature nobody could audit is never handed out.
    await this.audit.record({ kind: 'signing', internId: row.id, memberId, at: at.toISOString() }, request.context, (manager) =>
      lockRunningIntern(manager, row.id),
    );
    const signed = { internId: row.id, timestamp: String(Math.floor(at.getTime() / 1000)), user: memberId };
    const { bodySha256, route } = request.body;
    const reply: DaemonSignReply = {
      [INVOKE_HEADERS.signature]: this.key.sign(signingStringV1({ ...signed, bodySha256 })),
      [INVOKE_HEADERS.timestamp]: signed.timestamp,
      [INVOKE_HEADERS.user]: memberId,
    };
    if (route !== undefined) {
      const nonce = randomBytes(16).toString('base64url');
      reply[INVOKE_HEADERS.signatureV2] = this.key.sign(
        signingStringV2({ ...signed, nonce, method: route.method, path: route.path, bodySha256 }),
      );
      reply[INVOKE_HEADERS.nonce] = nonce;
    }
    return reply;
  }

  signingKeys(): DaemonSigningKeysReply {
    return this.key.jwks();
  }
}
