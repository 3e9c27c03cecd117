/**
 * What a run is started with (its spec) and what it needs from its replica (its environment): read by LiveRun,
 * the AgentLoop it drives and the RunHost that starts it, so none of them imports another for its types.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { ApprovalMode, Subjects } from '@interns/contracts';
import type { SessionOrigin } from '@interns/runs-domain';
import type { ModelProvider } from '../agent/model-provider';
import type { RuntimeDriver } from '../runtime/runtime-driver';
import type { SessionStreams } from '../sessions/session-streams';

export interface RunSettings {
  interactionDeadlineMs: number;
  executionDeadlineMs: number;
  streamHeartbeatMs: number;
  /** Tool calls one run may make; the model asking for one more ends the run with finish `length`. */
  maxToolCallsPerRun: number;
}

/** What a run needs from its replica. */
export interface RunEnvironment {
  nc: NatsConnection;
  subjects: Subjects;
  streams: SessionStreams;
  /** Where the intern's tools run (its sandboxed runtime). */
  runtime: RuntimeDriver;
  settings: RunSettings;
}

export interface RunSpec {
  sessionId: string;
  runId: string;
  internId: string;
  callerId: string;
  origin: SessionOrigin;
  model: string;
  provider: ModelProvider;
  approvalMode: ApprovalMode;
  instructions: string | null;
  prompt: string;
  /** The chat response a client reads live; null for invoke (its chunks go to the run's log only). */
  stream: LiveStream | null;
  correlationId: string;
}

/** A chat response's stream (minted by the gateway) and its `created`. */
export interface LiveStream {
  streamId: string;
  created: number;
}
