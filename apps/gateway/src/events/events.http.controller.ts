import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { callerId, DomainError, isUuid, type PlatformConfig, type Principal } from '@interns/contracts';
import { CORRELATION_ID_HEADER } from '../gateway-request';
import { GATEWAY_CONFIG } from '../gateway.tokens';
import { RequestAdmission } from '../admission/request-admission.hook';
import { ReaderQuota } from '../runs/reader-quota';
import { remainingDeadline } from '../service.client';
import { EventStreamReader } from './event-stream.reader';
import { eventStreamEnds, eventStreamReaders } from './events.metrics';
import { WorkspaceEventFeed } from './workspace-event-feed';

/** A reader whose socket takes nothing for this many keepalive intervals is not reading: it is cut off. */
const STALLED_KEEPALIVES = 3;

/**
 * `GET /events` (interface section 23): the caller's workspace's integration events as server-sent events, from
 * now or after `Last-Event-ID`. Checks 1-4 of CONTRACT section 1 ran in the admission hook (an intern route); the
 * feed decides which events the principal sees. One caller holds at most EVENT_STREAMS_PER_CALLER of them here.
 */
@Controller('events')
export class EventsHttpController {
  private readonly quota: ReaderQuota;

  constructor(
    @Inject(WorkspaceEventFeed) private readonly feed: WorkspaceEventFeed,
    @Inject(RequestAdmission) private readonly admission: RequestAdmission,
    @Inject(GATEWAY_CONFIG) private readonly config: PlatformConfig,
  ) {
    this.quota = new ReaderQuota(config.eventStreamsPerCaller, 'event streams');
  }

  @Get()
  async stream(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const state = request.gateway;
    const principal = state?.principal;
    // Only reachable if the route were served without the admission hook: refuse rather than guess.
    if (state == null || principal == null) throw new DomainError('internal_error', 'request was not authenticated');
    const lastEventId = lastEventIdOf(request);
    const giveBack = this.quota.take(callerId(principal));
    try {
      if (!(await this.feed.ready(remainingDeadline(state, 'GET /events').timeoutMs))) {
        throw new DomainError('internal_error', 'the event stream is starting; try again');
      }
      const from = lastEventId === null ? this.feed.livePosition : this.feed.resumePosition(lastEventId, principal);
      if (from === null) {
        throw new DomainError(
          'events_expired',
          `event ${lastEventId} is no longer kept (EVENTS_REPLAY_RETENTION_MS): read the current state, then reconnect without Last-Event-ID`,
        );
      }
      reply.hijack();
      await this.follow(request, reply, principal, from, state.correlationId);
    } finally {
      giveBack();
    }
  }

  /** From the resume point on, with no wait in between: nothing the feed takes in meanwhile is missed or repeated. */
  private async follow(request: FastifyRequest, reply: FastifyReply, principal: Principal, from: number, correlationId: string): Promise<void> {
    const authorization = request.headers.authorization;
    const reader = new EventStreamReader({
      response: reply.raw,
      principal,
      entries: this.feed.entries,
      from,
      keepaliveIntervalMs: this.config.keepaliveIntervalMs,
      stallLimitMs: STALLED_KEEPALIVES * this.config.keepaliveIntervalMs,
      recheckIntervalMs: this.config.keepaliveIntervalMs,
      stillAdmitted: () => this.admission.stillAdmits(authorization, principal),
      headers: { [CORRELATION_ID_HEADER]: correlationId },
    });
    const detach = this.feed.attach(reader);
    eventStreamReaders.inc();
    try {
      reader.start();
      eventStreamEnds.inc({ reason: await reader.finished });
    } finally {
      eventStreamReaders.dec();
      detach();
    }
  }
}

/** The event to resume after: `Last-Event-ID` (what an EventSource sends when it reconnects), a uuid; else 400. */
function lastEventIdOf(request: FastifyRequest): string | null {
  const value = request.headers['last-event-id'];
  if (value === undefined || value === '') return null;
  if (typeof value !== 'string' || !isUuid(value)) {
    throw new DomainError('invalid_body', 'Last-Event-ID must be the id of an event this stream sent (a uuid)');
  }
  return value.toLowerCase();
}
