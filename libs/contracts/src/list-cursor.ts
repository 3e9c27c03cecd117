import { createHmac, timingSafeEqual } from 'node:crypto';
import { DomainError } from './errors';

/**
 * Position after which a list page starts: newest first, so (created_at, id) descending. `scope` is what the
 * list was of (the workspace of an intern list, the intern of a run list): a cursor is refused elsewhere.
 */
export interface ListPosition {
  createdAt: string;
  id: string;
  scope: string;
}

/** Opaque, tamper-evident list cursors: base64url JSON plus an HMAC over it. */
export class CursorCodec {
  constructor(private readonly secret: string) {}

  encode(position: ListPosition): string {
    const payload = Buffer.from(JSON.stringify([position.createdAt, position.id, position.scope])).toString(
      'base64url',
    );
    return `${payload}.${this.sign(payload)}`;
  }

  decode(cursor: string): ListPosition {
    const invalid = () => new DomainError('invalid_body', 'starting_after is not a valid cursor');
    const [payload, signature, ...rest] = cursor.split('.');
    if (!payload || !signature || rest.length > 0) throw invalid();
    const expected = Buffer.from(this.sign(payload));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw invalid();
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw invalid();
    }
    if (!Array.isArray(parsed) || parsed.length !== 3 || !parsed.every((part) => typeof part === 'string')) {
      throw invalid();
    }
    const [createdAt, id, scope] = parsed as [string, string, string];
    return { createdAt, id, scope };
  }

  private sign(payload: string): string {
    return createHmac('sha256', this.secret).update(payload).digest('base64url');
  }
}
