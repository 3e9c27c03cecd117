/**
 * The workspace event stream (interface section 23): `GET /events`, relative to `API_BASE_PATH`. Intern route
 * credentials and checks (CONTRACT section 1); resumable with `Last-Event-ID` within EVENTS_REPLAY_RETENTION_MS.
 */
import { UUID_SCHEMA, ref } from './json-schema';
import { INTERN_ACCESS, OpenApiParameter, OpenApiPathItem, SERVICE_FAILURES } from './openapi-operation';
import { commonHeaders, errorResponses, fixedHeader } from './openapi-responses';

const RESUME_AFTER: OpenApiParameter = {
  name: 'Last-Event-ID',
  in: 'header',
  description:
    'Resume after this event (an `id:` the stream sent), as an EventSource sends it when it reconnects: the events since ' +
    'then come first, in order, then the stream goes on live. Not a uuid: 400. An event older than ' +
    '`EVENTS_REPLAY_RETENTION_MS`, or one this gateway no longer holds or never sent this credential: 410 `events_expired`.',
  schema: UUID_SCHEMA,
};

export const workspaceEvents: OpenApiPathItem = {
  get: {
    operationId: 'streamWorkspaceEvents',
    tags: ['Events'],
    summary: "Follow the workspace's events as they happen",
    description:
      "Server-sent events: the credential's workspace's integration events from now on (or after `Last-Event-ID`), each with " +
      '`id: <event id>`, `event: <type>` and `data: <WorkspaceEvent>`, in one order every gateway shares. Only events about ' +
      'interns and runs the credential may see: an intern key only its intern; a member (user key, OAuth) the runs it ' +
      'started and every intern event of the workspace; organization keys everything in the workspace. A `: keepalive` ' +
      'comment is written after `KEEPALIVE_INTERVAL_MS` of silence. The stream does not end on its own: it ends when the ' +
      'gateway stops, when the credential stops passing the checks (revoked, owner lost access: checked every ' +
      '`KEEPALIVE_INTERVAL_MS`), or when the client has read nothing for three keepalive intervals or fallen out of the ' +
      'retention; the client reconnects with `Last-Event-ID`. On 410 `events_expired` it reads the current state ' +
      '(`GET /interns`, runs) and reconnects without `Last-Event-ID`. One caller may hold `EVENT_STREAMS_PER_CALLER` (8) ' +
      'event streams open on one gateway; beyond: 429 `rate_limited`.',
    parameters: [RESUME_AFTER],
    responses: {
      '200': {
        description: 'Server-sent events: each a WorkspaceEvent, with its id and type.',
        headers: { ...commonHeaders(), 'Cache-Control': fixedHeader('no-cache', 'Event streams are never cached.') },
        content: {
          'text/event-stream': {
            schema: ref('WorkspaceStreamEvent'),
          },
        },
      },
      ...errorResponses([...INTERN_ACCESS, 'invalid_body', 'events_expired', 'rate_limited', ...SERVICE_FAILURES]),
    },
  },
};
