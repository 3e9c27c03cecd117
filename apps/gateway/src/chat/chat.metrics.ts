import { counter, gauge } from '@interns/service-runtime';
import type { RelayOutcome } from './sse-relay';

/** Chat responses being relayed to clients by this gateway. */
export const activeStreamsGauge = gauge({ name: 'interns_chat_streams_active', help: 'Chat SSE streams open on this gateway' });

/** How relayed chat responses ended (`done`, `client_gone`, `severed`, `overflow`, `aborted`). */
export const streamEndingsCounter = counter<'outcome'>({
  name: 'interns_chat_stream_endings_total',
  help: 'Chat SSE streams by how they ended',
  labelNames: ['outcome'],
});

export function streamEnded(outcome: RelayOutcome): void {
  activeStreamsGauge.dec();
  streamEndingsCounter.inc({ outcome });
}
