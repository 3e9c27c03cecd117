import { createHash } from 'node:crypto';

/** What both signing strings cover. */
export interface SigningStringV1Input {
  internId: string;
  /** Unix seconds, as the decimal string sent in `x-intern-invoke-timestamp`. */
  timestamp: string;
  /** The member id sent in `x-intern-invoke-user`. */
  user: string;
  /** SHA-256 of the request body, 64 lowercase hex. */
  bodySha256: string;
}

/** v2 adds the single-use nonce and the route. */
export interface SigningStringV2Input extends SigningStringV1Input {
  nonce: string;
  method: string;
  path: string;
}

/** CONTRACT section 8: `v1\n<intern_id>\n<timestamp>\n<user>\n<bodySha256>`. */
export function signingStringV1(input: SigningStringV1Input): string {
  return ['v1', input.internId, input.timestamp, input.user, input.bodySha256].join('\n');
}

/** CONTRACT section 8: `v2\n<intern_id>\n<timestamp>\n<nonce>\n<user>\n<method>\n<path>\n<bodySha256>`. */
export function signingStringV2(input: SigningStringV2Input): string {
  return ['v2', input.internId, input.timestamp, input.nonce, input.user, input.method, input.path, input.bodySha256].join(
    '\n',
  );
}

/** The `bodySha256` of a body as a daemon computes it from the bytes it received. */
export function sha256Hex(body: string | Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}
