import type { NatsConnection } from '@nats-io/transport-node';
import { errorEnvelope } from '@interns/contracts';
import type { ChatChunk, ChunkBuilder, Question, Usage } from '@interns/contracts';
import type { RunCancelReason } from '@interns/runs-domain';
import type { Ending, Outcome } from './run-ending';
import { StreamPublisher } from './stream-publisher';

/** Where a response goes: the chat stream the gateway relays, and what its chunks carry. */
export interface ResponseTarget {
  nc: NatsConnection;
  subject: string;
  streamId: string;
  /** The response's `created`, fixed by the gateway. */
  created: number;
  model: string;
  sessionId: string;
  heartbeatMs: number;
}

/**
 * One chat response of a run, in the order its client reads it: the role chunk, content as the model streams
 * it, then one of two endings, each followed by the final chunk (session id, usage) and `[DONE]`: the run
 * pauses on a question (the `service.provide_input` call, finish `tool_calls`), or the run ends (its finish or
 * error chunk). A client that left gets nothing more. Frames, their numbering and the heartbeats that fill
 * quiet stretches are the StreamPublisher's; each ending stops them.
 */
export class RunResponsePublisher {
  private readonly stream: StreamPublisher;

  constructor(private readonly target: ResponseTarget) {
    this.stream = new StreamPublisher(target.nc, target.subject, target.streamId, target.created, target.model, target.heartbeatMs);
    this.stream.chunk(this.stream.chunks.role());
  }

  get streamId(): string {
    return this.target.streamId;
  }

  content(text: string): void {
    this.stream.chunk(this.stream.chunks.content(text));
  }

  /** The run waits on `question`; the answer comes as a new request with a response of its own. */
  endWithQuestion(toolCallId: string, question: Question): void {
    const { chunks } = this.stream;
    this.stream.chunk(chunks.toolCall(toolCallId, question));
    this.stream.chunk(chunks.finish('tool_calls'));
    this.finish(null);
  }

  /** The run is over: stopped early (`ending`) or else as `outcome` says; `usage` is the run's whole. */
  endWithRun(ending: Ending | null, outcome: Outcome, usage: Usage | null): void {
    const last = endingChunk(this.stream.chunks, ending, outcome);
    if (last === null) {
      this.stream.close();
      return;
    }
    this.stream.chunk(last);
    this.finish(usage);
  }

  /** Stops without a word, e.g. when the run's end could not be recorded: the gateway reads the silence as a severed stream. */
  abandon(): void {
    this.stream.close();
  }

  private finish(usage: Usage | null): void {
    this.stream.chunk(this.stream.chunks.final(this.target.sessionId, usage));
    this.stream.done();
  }
}

/**
 * The finish (or error) chunk an attached client gets before the final chunk; null when the client is gone
 * and the stream is only closed.
 */
export function endingChunk(chunks: ChunkBuilder, ending: Ending | null, outcome: Outcome): ChatChunk | null {
  if (ending === null) {
    return outcome.finish === 'error' ? chunks.error(errorEnvelope(outcome.reason, outcome.message).error) : chunks.finish(outcome.finish);
  }
  switch (ending.tell) {
    case 'run_ended':
      return chunks.error(errorEnvelope('run_ended', endedMessage(ending.reason)).error);
    case 'internal_error':
      return chunks.error(errorEnvelope('internal_error', 'the runs service stopped; the run did not finish').error);
    case 'stop':
      return chunks.finish('stop');
    case 'nothing':
      return null;
    default: {
      const unknown: never = ending;
      throw new Error(`unknown ending ${JSON.stringify(unknown)}`);
    }
  }
}

function endedMessage(reason: RunCancelReason): string {
  switch (reason) {
    case 'intern_suspended':
      return 'the intern was suspended; the run ended';
    case 'intern_deleted':
      return 'the intern is being deleted; the run ended';
    case 'execution_deadline':
      return 'the run reached its execution deadline';
    case 'interaction_deadline':
      return 'the question was not answered in time; the run ended';
    default:
      return 'the run ended';
  }
}
