/** A status as a word on a coloured badge (the word carries the meaning; the colour only helps). */
export function StatusBadge({ status }: { status: string }) {
  const tone = TONES[status] ?? 'neutral';
  return <span className={`badge badge-${tone}`}>{status.replaceAll('_', ' ')}</span>;
}

const TONES: Record<string, string> = {
  running: 'good',
  completed: 'good',
  delivered: 'good',
  allowed: 'good',
  queued: 'busy',
  provisioning: 'busy',
  awaiting_chatapp_install: 'busy',
  awaiting_input: 'busy',
  destroying: 'busy',
  pending: 'busy',
  failed: 'bad',
  destroy_failed: 'bad',
  denied: 'bad',
  expired: 'bad',
  cancelled: 'neutral',
  stopped: 'neutral',
};
