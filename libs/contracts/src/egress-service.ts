/**
 * The egress service's messages (interface section 19): what runs asks it for each sandboxed command (a listener and
 * the sandbox's environment), what it asks lifecycle (an intern's egress context), and the egress log.
 */
import type { RequestContext } from './principal';

/** runs -> egress: serve one sandboxed command of `internId` (in run `runId`, when it is a run's) on a unix socket. */
export interface OpenEgressListenerRequest {
  internId: string;
  runId: string | null;
}

/** What the sandbox of that command needs: the socket to bind into it, and the environment to give it. */
export interface OpenEgressListenerReply {
  /** The listener's unix socket on the host (under EGRESS_SOCKET_DIR), mode 0600, the egress process's own. */
  socketPath: string;
  /** The egress CA's certificate (PEM), which the sandbox trusts beside the host's bundle. */
  caCertificate: string;
  /**
   * One variable per usable secret: its name uppercased, holding its placeholder `vault:<name>:<random>`. A secret
   * whose variable would replace one the sandbox sets itself (PATH, HOME, the proxy and CA variables) has none.
   */
  secretEnv: Record<string, string>;
}

/**
 * runs -> egress: the command goes on (a terminal lives longer than a shell command may run): its listener's expiry
 * starts again. `renewed: false`: no such listener here (it expired or its egress process restarted).
 */
export interface RenewEgressListenerRequest {
  socketPath: string;
}

/** runs -> egress: the command ended; its listener and every connection it holds go. */
export interface CloseEgressListenerRequest {
  socketPath: string;
}

/** egress -> lifecycle: the policy of an intern and the secrets it may use, sealed (lifecycle cannot open them). */
export interface EgressContextRequest {
  internId: string;
}

export interface EgressContextSecret {
  name: string;
  hosts: string[];
  /** The value sealed to the vault's public key: only the egress service, holding VAULT_MASTER_KEY, opens it. */
  sealed: string;
}

/** null `allow`: the intern does not exist (any more); nothing may leave for it. */
export interface EgressContextReply {
  allow: string[] | null;
  /** Which secret a name means for the intern: its own vault's, else the attached vault's, else the workspace's. */
  secrets: EgressContextSecret[];
}

/** One entry of `GET /interns/{intern_id}/egress/log`: what the proxy reports of a request, with its id and run. */
export interface EgressLogRecord extends EgressLogEntry {
  id: string;
  run_id: string | null;
}

/** One request the egress proxy handled, as it reports it for the log. Never holds a secret's value. */
export interface EgressLogEntry {
  /** When the request arrived (ISO 8601). */
  at: string;
  host: string;
  port: number;
  /** Method, path (without the query) and status only where the proxy sees HTTP: plain HTTP or terminated TLS. */
  method: string | null;
  path: string | null;
  decision: 'allowed' | 'denied';
  /** Why it was refused or failed (the text the client got), else null. */
  reason: string | null;
  /** Secrets whose placeholders the request carried: released when allowed, the refused one when denied. */
  secrets: string[];
  status: number | null;
  /** Bytes towards the origin and back: a tunnel's raw bytes, or an HTTP request's and response's head and body. */
  bytes_out: number;
  bytes_in: number;
}

export interface EgressLogPage {
  data: EgressLogRecord[];
  has_more: boolean;
  next_cursor?: string;
}

export const EGRESS_LOG_DEFAULT_LIMIT = 50;
export const EGRESS_LOG_MAX_LIMIT = 500;

/**
 * gateway -> egress: one page of an intern's egress log, newest first. The egress service asks lifecycle whether
 * `context` sees the intern (404 otherwise, as on every intern route) before it reads a row.
 */
export interface EgressLogRequest {
  context: RequestContext;
  internId: string;
  limit: number;
  /** The `next_cursor` of the previous page, as given: the page starts after the entry it names. */
  startingAfter: string | null;
}

/** The query of `GET /interns/{intern_id}/egress/log`, as the gateway parsed it. */
export type EgressLogQuery = Pick<EgressLogRequest, 'limit' | 'startingAfter'>;

/** lifecycle -> egress: a deleted intern's egress log goes (teardown, interface section 22). */
export interface PurgeEgressLogRequest {
  internId: string;
}
