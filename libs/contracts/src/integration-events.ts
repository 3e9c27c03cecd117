import type { ApprovalMode, Question, Usage } from './chat';
import type { InternProgress, InternStatus } from './intern';
import type { ServiceName } from './service-names';

/**
 * The public vocabulary of integration events (ARCHITECTURE "Version 1.1 additions"): what lifecycle and runs
 * tell other services, published from their own events through their outbox relays, on
 * `<prefix>.evt.<source>.<type>` (`subjectsFor(prefix).integrationEvent(type)`). Consumers (analytics,
 * webhooks) read these and never a service's domain events, so no consumer re-derives a decider.
 *
 * `source`: the publishing service. `version`: of the type's `data`; a change a consumer could misread gets a
 * new version (consumers keep a version they do not know for a newer replica rather than guess).
 */
export const INTEGRATION_EVENT_TYPES = {
  'intern.created': { source: 'lifecycle', version: 1 },
  /** Its name, description or model changed (instructions are not published). */
  'intern.updated': { source: 'lifecycle', version: 1 },
  /** Its status or its provisioning progress changed (CONTRACT section 13). */
  'intern.status_changed': { source: 'lifecycle', version: 1 },
  /** Teardown finished: the intern is gone. */
  'intern.deleted': { source: 'lifecycle', version: 1 },
  'run.started': { source: 'runs', version: 1 },
  /** A prompt steered a run that was going. */
  'run.prompt_joined': { source: 'runs', version: 1 },
  /** Finished `stop` or `length` (CONTRACT section 13). */
  'run.completed': { source: 'runs', version: 1 },
  /** Finished `error` (CONTRACT section 13). */
  'run.failed': { source: 'runs', version: 1 },
  /** Ended before finishing: cancelled, its question expired, its intern suspended or deleted, its owner lost. */
  'run.cancelled': { source: 'runs', version: 1 },
  /** A run asks its caller (CONTRACT section 13). */
  'question.opened': { source: 'runs', version: 1 },
} as const satisfies Record<string, { source: ServiceName; version: number }>;

export type IntegrationEventType = keyof typeof INTEGRATION_EVENT_TYPES;

/** The types CONTRACT section 13 lets a webhook subscribe to; their `data` is the payload's `data`. */
export const WEBHOOK_EVENT_TYPES = ['intern.status_changed', 'run.completed', 'run.failed', 'question.opened'] as const;

export function isIntegrationEventType(type: string): type is IntegrationEventType {
  return Object.prototype.hasOwnProperty.call(INTEGRATION_EVENT_TYPES, type);
}

// Type aliases rather than interfaces: plain JSON objects, assignable where any object record is read.
type RunRef = { intern_id: string; run_id: string; session_id: string };

/** How a run ended, as CONTRACT section 13 describes `run.completed` and `run.failed`. */
type RunEnding = RunRef & { origin: 'chat' | 'invoke'; usage: Usage | null };

export type IntegrationEventData = {
  'intern.created': {
    intern_id: string;
    organization_id: string;
    workspace_id: string;
    /** The member who created it; null for organization keys. */
    created_by: string | null;
    name: string;
    description: string | null;
    model: string | null;
  };
  /** The values after the change. */
  'intern.updated': { intern_id: string; name: string; description: string | null; model: string | null };
  'intern.status_changed': {
    intern_id: string;
    status: InternStatus;
    /** Null when the intern was just created. Equal to `status` when only the progress moved. */
    previous_status: InternStatus | null;
    progress: InternProgress | null;
  };
  'intern.deleted': { intern_id: string };
  'run.started': RunRef & {
    origin: 'chat' | 'invoke';
    /** Who asked: a member (user keys, OAuth) or an organization or intern key; the other is null. */
    user_id: string | null;
    api_key_id: string | null;
    model: string;
    approval_mode: ApprovalMode;
  };
  'run.prompt_joined': RunRef;
  'run.completed': RunEnding & { finish_reason: 'stop' | 'length' };
  /** The contract's fields, plus `error`: why it failed (its message within MAX_INTEGRATION_TEXT_BYTES). */
  'run.failed': RunEnding & { finish_reason: 'error'; error: { reason: string; message: string } };
  'run.cancelled': RunEnding & { reason: string };
  /** `arguments` as asked, its `operation` / `message` within MAX_INTEGRATION_TEXT_BYTES. */
  'question.opened': RunRef & { tool_call_id: string; arguments: Question; expires_at: string };
};

/**
 * Model-written text an integration event carries (a question's `operation` or `message`, a failure's message) is
 * cut to this many UTF-8 bytes: consumers need to show it, not a transcript, and every message stays small.
 */
export const MAX_INTEGRATION_TEXT_BYTES = 4096;

/** `text` within `maxBytes` (UTF-8), its end replaced by `… [truncated N bytes]` when cut, as stored events are. */
export function boundedText(text: string, maxBytes = MAX_INTEGRATION_TEXT_BYTES): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= maxBytes) return text;
  let end = Math.max(0, maxBytes - 32);
  // Never split a UTF-8 sequence: step back over continuation bytes (10xxxxxx).
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end -= 1;
  return `${new TextDecoder().decode(bytes.subarray(0, end))}… [truncated ${bytes.length - end} bytes]`;
}

/** One integration event as published (the JSON body of its JetStream message). */
export type IntegrationEvent<T extends IntegrationEventType = IntegrationEventType> = {
  [K in T]: {
    /** Stable across republishing (derived from the source event): consumers dedupe by it. */
    id: string;
    type: K;
    version: number;
    /** When it happened: the time of the event it comes from. */
    created_at: string;
    /** The intern's workspace; null when the publisher does not know it (runs). */
    workspace_id: string | null;
    /** Orders the events about one intern (lifecycle) or one session (runs): a later one has a higher number. */
    sequence: number;
    /** The request that caused it, as in the logs and traces. */
    correlation_id: string;
    data: IntegrationEventData[K];
  };
}[T];
