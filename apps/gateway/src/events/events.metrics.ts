import { counter, gauge } from '@interns/service-runtime';

/** Workspace event streams (`GET /events`) open on this gateway. */
export const eventStreamReaders = gauge({ name: 'interns_event_stream_readers', help: 'Workspace event streams open on this gateway' });

/** Why event streams ended: `client_gone`, `fell_behind`, `stalled`, `credential_revoked`, `shutdown`. */
export const eventStreamEnds = counter<'reason'>({
  name: 'interns_event_stream_ends_total',
  help: 'Workspace event streams ended, by reason',
  labelNames: ['reason'],
});

/** Events the feed read, by outcome: `held` (readers may see it), `duplicate`, `unroutable` (no workspace), `unreadable`, `history` (too old to resume after; only learned from). */
export const eventFeedEvents = counter<'outcome'>({
  name: 'interns_event_feed_events_total',
  help: "Integration events read by this gateway's workspace event feed, by outcome",
  labelNames: ['outcome'],
});
