import { randomUUID } from 'node:crypto';
import { BeforeApplicationShutdown, Controller, HttpCode, Inject, Logger, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Subscription } from '@nats-io/transport-node';
import { callerId, CHAT_FREE_TEXT, chunkIdOf, decodeStreamFrame, INVOKE_FREE_TEXT, parseChatBody, parseInvokeBody } from '@interns/contracts';
import type { ChatReply, ChatRequest, InvokeReply, InvokeRequest, PlatformConfig } from '@interns/contracts';
import { jsonBodyOf } from '../http/body-rules';
import { CORRELATION_ID_HEADER } from '../gateway-request';
import { GATEWAY_CONFIG } from '../gateway.tokens';
import { INTERN_ID_PARAM, visibleId } from '../interns/intern-routes';
import { ServiceClient } from '../service.client';
import { ChatTurnCounter } from './chat-turn-counter';
import { activeStreamsGauge, streamEnded } from './chat.metrics';
import { CHAT_DEPENDENCIES } from './chat.tokens';
import type { ChatDependencies } from './chat.tokens';
import { RUN_ID_HEADER } from './run-id-header';
import { severedChunks } from './severed-chunks';
import { RelayOutcome, SseRelay } from './sse-relay';

/**
 * Chat and invoke (CONTRACT sections 6, 7 and 12). For chat the gateway subscribes to a fresh stream subject
 * before it asks runs to start, so no chunk is missed; errors before the stream starts are plain JSON
 * answers; once runs accepted, the relay owns the response, with the run's id in `X-Run-Id`. A client that
 * leaves before `[DONE]` (or stops reading) cancels the run, unless the chat asked for `"background": true`.
 */
@Controller('interns')
export class ChatHttpController implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Chat');
  /** Streams being relayed; ended (severed, so clients know to retry) when the gateway shuts down. */
  private readonly relays = new Set<SseRelay>();
  private closing = false;

  constructor(
    @Inject(ServiceClient) private readonly services: ServiceClient,
    @Inject(CHAT_DEPENDENCIES) private readonly chat: ChatDependencies,
    @Inject(GATEWAY_CONFIG) private readonly config: PlatformConfig,
    @Inject(ChatTurnCounter) private readonly turns: ChatTurnCounter,
  ) {}

  @Post(`:${INTERN_ID_PARAM}/chat/completions`)
  async completions(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Param(INTERN_ID_PARAM) rawInternId: string,
  ): Promise<void> {
    const turn = parseChatBody(jsonBodyOf(request, CHAT_FREE_TEXT));
    // A held stream must not keep the raw body (a client resending its history sends hundreds of KB).
    request.body = undefined;
    const internId = visibleId(rawInternId);
    const context = this.services.contextOf(request);
    if (turn.kind === 'prompt') await this.turns.count(callerId(context.principal), internId);

    const streamId = randomUUID();
    const created = Math.floor(Date.now() / 1000);
    let accepted: Extract<ChatReply, { status: 'streaming' }> | null = null;
    const relay = new SseRelay({
      response: reply.raw,
      keepaliveIntervalMs: this.config.keepaliveIntervalMs,
      heartbeatMs: this.config.streamHeartbeatMs,
      bufferLimitBytes: this.config.streamClientBufferBytes,
      headers: { [CORRELATION_ID_HEADER]: context.correlationId },
      severedChunks: () => (accepted === null ? [] : severedChunks(chunkIdOf(streamId), created, accepted)),
      confirmSilence: () => this.chat.nats.flush(),
    });
    const subscription = this.chat.nats.subscribe(this.services.subjects.runs.stream(streamId), {
      callback: (error, message) => relay.accept(error ? null : decodeStreamFrame(message.data)),
    });

    let answer: ChatReply;
    try {
      const payload: ChatRequest = { context, internId, streamId, created, turn };
      answer = await this.services.request<ChatReply>(this.services.subjects.runs.chat, request, payload);
    } catch (error) {
      subscription.unsubscribe();
      relay.abort();
      throw error;
    }
    if (answer.status === 'steered') {
      subscription.unsubscribe();
      relay.abort();
      reply
        .code(202)
        .header(RUN_ID_HEADER, answer.runId)
        .type('application/json; charset=utf-8')
        .send({ session_id: answer.sessionId, status: 'steered' });
      return;
    }

    accepted = answer;
    reply.hijack();
    this.relays.add(relay);
    activeStreamsGauge.inc();
    relay.start({ [RUN_ID_HEADER]: answer.runId });
    // Accepted while the gateway was already closing: severed like the streams open at the time.
    if (this.closing) relay.sever();
    // The handler returns now: a held stream keeps only the relay, its subscription and what the ending needs,
    // not this request's frames (about a third of what an idle stream costs the gateway otherwise).
    const ending = { streamId, sessionId: answer.sessionId, background: turn.background, correlationId: context.correlationId };
    void relay.finished
      .then((outcome) => this.streamEnded(relay, subscription, outcome, ending))
      .catch((error: unknown) => {
        // Nobody awaits this chain: a failure (say, the broker connection closing under the notice) is logged here.
        this.logger.error(`chat stream ${ending.streamId} could not be wound up: ${error instanceof Error ? error.message : String(error)}`, {
          correlation_id: ending.correlationId,
        });
      });
  }

  private streamEnded(
    relay: SseRelay,
    subscription: Subscription,
    outcome: RelayOutcome,
    stream: { streamId: string; sessionId: string; background: boolean; correlationId: string },
  ): void {
    this.relays.delete(relay);
    streamEnded(outcome);
    subscription.unsubscribe();
    // The client is gone, or got `stream_severed`: in the background the run goes on (readable with the stream
    // route); otherwise it ends with its client.
    if (outcome === 'client_gone' || outcome === 'overflow' || outcome === 'severed') {
      this.chat.channel.notify(stream.sessionId, { type: 'disconnect', streamId: stream.streamId, background: stream.background });
    }
    if (outcome === 'severed' || outcome === 'overflow') {
      this.logger.warn(`chat stream ${stream.streamId} of session ${stream.sessionId} ended ${outcome}`, {
        correlation_id: stream.correlationId,
      });
    }
  }

  /** Before the HTTP server closes: open streams end with `stream_severed` and their runs are cancelled. */
  beforeApplicationShutdown(): void {
    this.closing = true;
    for (const relay of this.relays) relay.sever();
  }

  @Post(`:${INTERN_ID_PARAM}/invoke`)
  @HttpCode(202)
  async invoke(@Req() request: FastifyRequest, @Param(INTERN_ID_PARAM) rawInternId: string): Promise<InvokeReply> {
    const body = parseInvokeBody(jsonBodyOf(request, INVOKE_FREE_TEXT));
    const internId = visibleId(rawInternId);
    const context = this.services.contextOf(request);
    await this.turns.count(callerId(context.principal), internId);
    const payload: InvokeRequest = { context, internId, input: body.input, sessionId: body.session_id ?? null };
    return this.services.request<InvokeReply>(this.services.subjects.runs.invoke, request, payload);
  }
}
