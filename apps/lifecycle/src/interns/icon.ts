import { createHash } from 'node:crypto';

export const ICON_SIZE_PX = 128;

/**
 * The deterministic identicon of an intern: same id, same bytes, same hash. jdenticon (and its canvas renderer) is
 * loaded by the first intern created, not by every lifecycle process at its start.
 */
export async function renderIcon(internId: string): Promise<{ png: Buffer; sha256: string }> {
  const { toPng } = await import('jdenticon');
  const png = toPng(internId, ICON_SIZE_PX);
  return { png, sha256: createHash('sha256').update(png).digest('hex') };
}
