/** What a shell runner needs to run one command for an intern. */
export interface ShellRequest {
  internId: string;
  /** The run the command is a tool call of (null outside a run): the egress proxy's byte budget is per run. */
  runId?: string | null;
  /** The intern's workspace directory on this host (it exists). */
  workspace: string;
  command: string;
  signal: AbortSignal;
}

/**
 * Runs the shell tool's commands. The answer is the tool result the model sees (output plus notes); a
 * command that cannot run at all is answered with the reason, never thrown.
 */
export interface ShellRunner {
  run(request: ShellRequest): Promise<string>;
  /** Lets go of what the runner keeps for an intern beside its workspace (a sandbox's cgroup) once it is deleted. */
  forget?(internId: string): Promise<void>;
}
