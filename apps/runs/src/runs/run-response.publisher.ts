import type { NatsConnection } from '@nats-io/transport-node';
import { ChunkBuilder, errorEnvelope } from '@interns/contracts';
import type { ChatChunk, Question, Usage } from '@interns/contracts';
import { RUN_ENDINGS } from '@interns/runs-domain';
import type { RunChunkLog } from './run-chunk-log';
import type { Ending, Outcome } from './run-ending';
import { StreamPublisher } from './stream-publisher';

/** A client reading the response live: the chat stream the gateway relays. */
export interface LiveTarget {
  nc: NatsConnection;
  subject: string;
  streamId: string;
  heartbeatMs: number;
}

/** What a response's chunks carry, where they are kept, and who reads them live (nobody: `live` null). */
export interface ResponseTarget {
  /** `chatcmpl-<id>`, constant per response. */
  chunkId: string;
  /** The response's `created` (fixed by the gateway for a chat response). */
  created: number;
  model: string;
  sessionId: string;
  log: RunChunkLog;
  live: LiveTarget | null;
}

/**
 * One response of a run, in the order its readers get it: the role chunk, content as the model streams it,
 * then one of two endings, each followed by the final chunk (session id, usage): the run pauses on a question
 * (the `service.provide_input` call, finish `tool_calls`), or the run ends (its finish or error chunk, and the
 * run's `[DONE]` in its log). Every chunk goes to the run's chunk log, numbered; a live client (chat) gets
 * the same chunks with their numbers, and `[DONE]` after each response, until it leaves. Frames and heartbeats
 * are the StreamPublisher's.
 */
export class RunResponsePublisher {
  private readonly chunks: ChunkBuilder;
  private live: StreamPublisher | null;

  constructor(private readonly target: ResponseTarget) {
    this.chunks = new ChunkBuilder({ id: target.chunkId, model: target.model, created: target.created });
    const live = target.live;
    this.live = live === null ? null : new StreamPublisher(live.nc, live.subject, live.streamId, live.heartbeatMs);
    this.emit(this.chunks.role());
  }

  /** The live client's stream, if one still reads this response. */
  get streamId(): string | null {
    return this.live?.streamId ?? null;
  }

  /** The live client left and the run goes on (background): its chunks go to the log only. */
  detach(): void {
    this.live?.close();
    this.live = null;
  }

  content(text: string): void {
    this.emit(this.chunks.content(text));
  }

  /** The run waits on `question`; the answer comes with a response of its own. */
  endWithQuestion(toolCallId: string, question: Question): void {
    this.emit(this.chunks.toolCall(toolCallId, question));
    this.emit(this.chunks.finish('tool_calls'));
    this.emit(this.chunks.final(this.target.sessionId, null));
    this.live?.done();
  }

  /** The run is over: stopped early (`ending`) or else as `outcome` says; `usage` is the run's whole. */
  endWithRun(ending: Ending | null, outcome: Outcome, usage: Usage | null): void {
    const told = endingChunk(this.chunks, ending, outcome);
    // A client that left is told nothing; the log's readers learn the run stopped.
    if (told === null) this.detach();
    this.emit(told ?? this.chunks.finish('stop'));
    this.emit(this.chunks.final(this.target.sessionId, usage));
    this.live?.done();
    this.target.log.end();
  }

  /** Stops without a word, e.g. when the run's end could not be recorded: the gateway reads the silence as a severed stream. */
  abandon(): void {
    this.detach();
  }

  private emit(chunk: ChatChunk): void {
    const json = JSON.stringify(chunk);
    const eventId = this.target.log.append(json);
    this.live?.chunk(json, eventId);
  }
}

/**
 * The finish (or error) chunk an attached client gets before the final chunk, as the ending's RUN_ENDINGS row
 * tells it; null when the client is gone and the stream is only closed.
 */
export function endingChunk(chunks: ChunkBuilder, ending: Ending | null, outcome: Outcome): ChatChunk | null {
  const rule = RUN_ENDINGS[ending === null ? outcome.finish : ending.reason];
  switch (rule.tell) {
    case 'finish':
      return chunks.finish(rule.finishReason);
    case 'run_error':
      if (outcome.finish !== 'error') throw new Error(`a run that finished ${outcome.finish} has no error to tell`);
      return chunks.error(errorEnvelope(outcome.reason, outcome.message).error);
    case 'run_ended':
    case 'internal_error':
      return chunks.error(errorEnvelope(rule.tell, rule.message).error);
    case 'stop':
      return chunks.finish('stop');
    case 'nothing':
      return null;
    default: {
      const unknown: never = rule;
      throw new Error(`unknown ending ${JSON.stringify(unknown)}`);
    }
  }
}
