import { performance } from 'node:perf_hooks';
import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { decodeStreamFrame, subjectsFor } from '@interns/contracts';

/**
 * Watches one platform's NATS traffic from outside, to place a chat turn's steps in time: the gateway's chat
 * request to runs, runs' intern lookup to lifecycle, both replies, the frames runs publishes on the turn's
 * stream subject (what the gateway relays), the run's chunk log appends (JetStream) and the integration events.
 * Plain subscribers without a queue group get a copy of every message and answer nothing, so the services'
 * own traffic is unchanged. Every stamp is performance.now() in the callback, on this process's clock.
 */

/** Each moment of one turn the observer saw, keyed by the chat request's stream id. */
export interface ObservedTurn {
  chatRequestAt: number | null;
  chatReplyAt: number | null;
  lookupRequestAt: number | null;
  lookupReplyAt: number | null;
  /** The first chunk frame (the role chunk), the first with content, and the done frame. */
  roleFrameAt: number | null;
  contentFrameAt: number | null;
  doneFrameAt: number | null;
  /** Frames on runs.stream.<stream id>, heartbeats included. */
  streamFrames: number;
  /** Frames appended to the run's chunk log (runs.chunks.<run id>), the done frame included. */
  logAppends: number;
  /** For each append whose JetStream acknowledgement was seen: publish -> ack, ms. */
  logAckMs: number[];
}

interface RpcPacket {
  data?: { streamId?: string; context?: { correlationId?: string } };
}

/** `_INBOX_gateway.<nuid>.<token>` -> `_INBOX_gateway.<nuid>.*`: every reply to that connection's requests. */
function muxInboxOf(replySubject: string): string | null {
  const tokens = replySubject.split('.');
  return tokens.length === 3 ? `${tokens[0]}.${tokens[1]}.*` : null;
}

export class TurnObserver {
  private readonly chatRequests = new Map<string, { at: number; reply: string; correlationId: string | null }>();
  private readonly lookups = new Map<string, { at: number; reply: string }>();
  private readonly replies = new Map<string, number>();
  private readonly streams = new Map<string, { role: number | null; content: number | null; done: number | null; frames: number }>();
  private readonly logs = new Map<string, { at: number; reply: string | null }[]>();
  private readonly inboxes = new Set<string>();
  private pendingInboxes: string[] = [];
  /** Integration events published (by the outbox relays) since the last `resetEvents()`. */
  integrationEvents = 0;

  constructor(
    private readonly nc: NatsConnection,
    prefix: string,
  ) {
    const subjects = subjectsFor(prefix);
    nc.subscribe(subjects.runs.chat, { callback: (_error, message) => this.onChatRequest(message) });
    nc.subscribe(subjects.lifecycle.getIntern, { callback: (_error, message) => this.onLookup(message) });
    nc.subscribe(subjects.runs.stream('>'), { callback: (_error, message) => this.onStreamFrame(message) });
    nc.subscribe(subjects.runs.chunks('*'), {
      callback: (_error, message) => {
        const at = performance.now();
        const runId = message.subject.slice(message.subject.lastIndexOf('.') + 1);
        const appends = this.logs.get(runId) ?? [];
        this.logs.set(runId, appends);
        appends.push({ at, reply: message.reply ?? null });
      },
    });
    nc.subscribe(`${prefix}.evt.>`, {
      callback: () => {
        this.integrationEvents += 1;
      },
    });
  }

  /**
   * Subscribes to the reply inboxes learnt from the requests seen so far (the gateway's and runs' connections),
   * and waits until the broker has them: turns after this see their replies too.
   */
  async followReplies(): Promise<number> {
    for (const inbox of this.pendingInboxes.splice(0)) {
      this.nc.subscribe(inbox, {
        callback: (_error, message) => {
          this.replies.set(message.subject, performance.now());
        },
      });
    }
    await this.nc.flush();
    return this.inboxes.size;
  }

  resetEvents(): void {
    this.integrationEvents = 0;
  }

  /** What was seen of the turn whose response's chunks carry `chatcmpl-<streamId>`, and of its run. */
  turn(streamId: string, runId: string | null): ObservedTurn {
    const chat = this.chatRequests.get(streamId);
    const lookup = chat?.correlationId ? this.lookups.get(chat.correlationId) : undefined;
    const stream = this.streams.get(streamId);
    const appends = runId === null ? [] : (this.logs.get(runId) ?? []);
    const logAckMs: number[] = [];
    for (const append of appends) {
      const ackAt = append.reply === null ? undefined : this.replies.get(append.reply);
      if (ackAt !== undefined) logAckMs.push(ackAt - append.at);
    }
    return {
      chatRequestAt: chat?.at ?? null,
      chatReplyAt: chat ? (this.replies.get(chat.reply) ?? null) : null,
      lookupRequestAt: lookup?.at ?? null,
      lookupReplyAt: lookup ? (this.replies.get(lookup.reply) ?? null) : null,
      roleFrameAt: stream?.role ?? null,
      contentFrameAt: stream?.content ?? null,
      doneFrameAt: stream?.done ?? null,
      streamFrames: stream?.frames ?? 0,
      logAppends: appends.length,
      logAckMs,
    };
  }

  private onChatRequest(message: Msg): void {
    const at = performance.now();
    const packet = parsePacket(message);
    const streamId = packet?.data?.streamId;
    if (streamId === undefined || !message.reply) return;
    this.chatRequests.set(streamId, { at, reply: message.reply, correlationId: packet?.data?.context?.correlationId ?? null });
    this.learnInbox(message.reply);
  }

  private onLookup(message: Msg): void {
    const at = performance.now();
    const correlationId = parsePacket(message)?.data?.context?.correlationId;
    // The first lookup of a turn is the one a chat prompt waits on.
    if (correlationId === undefined || !message.reply || this.lookups.has(correlationId)) return;
    this.lookups.set(correlationId, { at, reply: message.reply });
    this.learnInbox(message.reply);
  }

  private onStreamFrame(message: Msg): void {
    const at = performance.now();
    const streamId = message.subject.slice(message.subject.lastIndexOf('.') + 1);
    const seen = this.streams.get(streamId) ?? { role: null, content: null, done: null, frames: 0 };
    this.streams.set(streamId, seen);
    seen.frames += 1;
    const frame = decodeStreamFrame(message.data);
    if (frame?.kind === 'done') seen.done ??= at;
    if (frame?.kind !== 'chunk' || frame.payload === null) return;
    if (seen.role === null) seen.role = at;
    else if (seen.content === null && hasContent(frame.payload)) seen.content = at;
  }

  private learnInbox(reply: string): void {
    const inbox = muxInboxOf(reply);
    if (inbox === null || this.inboxes.has(inbox)) return;
    this.inboxes.add(inbox);
    this.pendingInboxes.push(inbox);
  }
}

function parsePacket(message: Msg): RpcPacket | null {
  try {
    return JSON.parse(message.string()) as RpcPacket;
  } catch {
    return null;
  }
}

function hasContent(payload: Uint8Array): boolean {
  const chunk = JSON.parse(Buffer.from(payload).toString('utf8')) as { choices?: { delta?: { content?: string } }[] };
  const content = chunk.choices?.[0]?.delta?.content;
  return typeof content === 'string' && content !== '';
}
