import { createHash } from 'node:crypto';
import { toPng } from 'jdenticon';

export const ICON_SIZE_PX = 128;

/** The deterministic identicon of an intern: same id, same bytes, same hash. */
export function renderIcon(internId: string): { png: Buffer; sha256: string } {
  const png = toPng(internId, ICON_SIZE_PX);
  return { png, sha256: createHash('sha256').update(png).digest('hex') };
}
