/** What the egress proxy is given and what it reports (interface section 19): policy, context, log entry, options. */
import type { AddressPolicy, HostResolver } from './address-policy';
import type { EgressCa } from './egress-ca';
import type { EgressLogEntry } from '@interns/contracts';
import type { EgressSecretBinding } from './secret-release';

/** An intern's egress policy as the service supplies it. */
export interface EgressPolicy {
  /** Exact hosts and `*.domain` patterns. */
  allow: readonly string[];
  /** The secrets the intern may use. */
  secrets: readonly EgressSecretBinding[];
}

/** Who the connections of one listener belong to, and how the proxy learns their policy and secret values. */
export interface EgressContext {
  internId: string;
  runId: string | null;
  /** The current policy; asked for each request, so a change applies to the next one. */
  policy(): Promise<EgressPolicy>;
  /** A secret's value; asked only when its placeholder is about to be released. */
  openSecret(name: string): Promise<string>;
}

/** One handled request, for the egress log (its shape is the log route's, less the id and run the service adds). */
export type { EgressLogEntry } from '@interns/contracts';

export interface EgressProxyOptions {
  ca: EgressCa;
  /** EGRESS_PORTS. */
  ports: readonly number[];
  addressPolicy: AddressPolicy;
  /** Name resolution; resolverWith(EGRESS_RESOLVE) in the service. */
  resolver: HostResolver;
  /** EGRESS_BYTES_PER_RUN: bytes in and out one run may move. */
  bytesPerRun: number;
  /** EGRESS_CONNECTIONS_PER_INTERN: connections to the proxy one intern may hold open at once. */
  connectionsPerIntern: number;
  onLog(entry: EgressLogEntry, context: EgressContext): void;
  /** CA certificates (PEM) the upstream leg of terminated TLS trusts besides Node's roots (tests' origins). */
  upstreamCa?: readonly string[];
  /** How long connecting to an origin (TCP and TLS handshake) may take. */
  connectTimeoutMs?: number;
  /** How long a connection may sit idle before it is closed. */
  idleTimeoutMs?: number;
  /** How long resolving a name may take. */
  resolveTimeoutMs?: number;
  /** How long a run's byte budget is kept after its last listener closed, for its next command (default 6 h). */
  budgetRetentionMs?: number;
}
