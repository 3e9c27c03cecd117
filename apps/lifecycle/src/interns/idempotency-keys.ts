import { createHash } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { callerId, CreateInternRequest, DomainError } from '@interns/contracts';
import { isUniqueViolation } from '@interns/database';

const IDEMPOTENCY_PKEY = 'idempotency_keys_pkey';
/** Races lost to a twin are answered as its replay; a twin that keeps not showing up is an error. */
const TWIN_RACES = 3;

/** A create's Idempotency-Key: scoped to the caller and workspace, remembered with a hash of the canonical body. */
export interface IdempotencyClaim {
  caller: string;
  workspaceId: string;
  key: string;
  requestHash: string;
}

/** The claim of a create that carries an Idempotency-Key; null without one. */
export function idempotencyClaim(request: CreateInternRequest): IdempotencyClaim | null {
  if (request.idempotencyKey === null) return null;
  const { principal } = request.context;
  return {
    caller: callerId(principal),
    workspaceId: principal.workspaceId,
    key: request.idempotencyKey,
    requestHash: createHash('sha256').update(canonicalJson(request.body)).digest('hex'),
  };
}

/** Thrown inside the create's transaction when a concurrent request with the same key committed first. */
export class IdempotencyRace extends Error {
  constructor() {
    super('a concurrent request with the same Idempotency-Key committed first');
  }
}

export interface IdempotentCreate<T> {
  /** Creates, calling `remember` inside its transaction. */
  create(): Promise<T>;
  /** The answer to a repeated request: the intern the first one created. */
  replay(internId: string): Promise<T>;
  /** An error of `create` that a twin with the same body can cause (e.g. winning on the name). */
  lostToTwin(error: unknown): boolean;
}

/**
 * `lifecycle.idempotency_keys`: a create with an Idempotency-Key runs once; the same key with the same body
 * answers as the first request did (a replay), with another body 409 `idempotency_key_reused`.
 */
export class IdempotencyKeys {
  constructor(private readonly dataSource: DataSource) {}

  /** `create` once per claim; without a claim, simply `create`. */
  async once<T>(claim: IdempotencyClaim | null, steps: IdempotentCreate<T>): Promise<T> {
    if (claim === null) return steps.create();
    for (let race = 0; ; race += 1) {
      const earlier = await this.previous(claim);
      if (earlier !== null) return steps.replay(earlier);
      try {
        return await steps.create();
      } catch (error) {
        // A concurrent request with the same key committed first (on the key or, same body, on the name).
        const raced = error instanceof IdempotencyRace;
        if ((raced || steps.lostToTwin(error)) && race < TWIN_RACES) {
          const twin = await this.previous(claim);
          if (twin !== null) return steps.replay(twin);
          if (raced) continue;
        }
        throw error;
      }
    }
  }

  /** Inside the create's transaction: the key commits with the intern, or a concurrent twin's key wins. */
  async remember(manager: EntityManager, claim: IdempotencyClaim, internId: string): Promise<void> {
    try {
      await manager.query(
        `INSERT INTO lifecycle.idempotency_keys (caller, workspace_id, key, request_hash, intern_id)
         VALUES ($1, $2, $3, $4, $5)`,
        [claim.caller, claim.workspaceId, claim.key, claim.requestHash, internId],
      );
    } catch (error) {
      if (isUniqueViolation(error, IDEMPOTENCY_PKEY)) throw new IdempotencyRace();
      throw error;
    }
  }

  /** The intern an earlier request with this key created; 409 when that request had another body. */
  private async previous(claim: IdempotencyClaim): Promise<string | null> {
    const rows: { request_hash: string; intern_id: string }[] = await this.dataSource.query(
      `SELECT request_hash, intern_id FROM lifecycle.idempotency_keys WHERE workspace_id = $1 AND caller = $2 AND key = $3`,
      [claim.workspaceId, claim.caller, claim.key],
    );
    const previous = rows[0];
    if (!previous) return null;
    if (previous.request_hash !== claim.requestHash) {
      throw new DomainError('idempotency_key_reused', 'Idempotency-Key was already used with a different body');
    }
    return previous.intern_id;
  }
}

/** Key order must not make two equal bodies look different. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
