/** An intern on the process manager's to-do list, as far as choosing tasks is concerned. */
export interface TaskCandidate {
  id: string;
  workspaceId: string;
}

/** What is running now, and the limits on what may. */
export interface TaskSlots {
  /** Interns with a task in flight: one task per intern at a time. */
  inFlight: ReadonlySet<string>;
  inFlightPerWorkspace: ReadonlyMap<string, number>;
  /** Tasks in flight at once across interns. */
  maxParallel: number;
  /** Tasks in flight at once per workspace, so one workspace's teardowns (or stops) cannot take every slot. */
  perWorkspace: number;
  /** False while the intern waits out its backoff (PerKeyBackoff). */
  isReady: (internId: string) => boolean;
}

/**
 * Which interns of the to-do list get a task now, in the list's order: each that has none in flight and is not
 * backing off, while its workspace and the whole have free slots (those chosen take theirs).
 */
export function chooseTasks<T extends TaskCandidate>(pending: readonly T[], slots: TaskSlots): T[] {
  const chosen: T[] = [];
  const inFlight = new Set(slots.inFlight);
  const perWorkspace = new Map(slots.inFlightPerWorkspace);
  for (const item of pending) {
    if (inFlight.size >= slots.maxParallel) break;
    if (inFlight.has(item.id) || !slots.isReady(item.id)) continue;
    const busy = perWorkspace.get(item.workspaceId) ?? 0;
    if (busy >= slots.perWorkspace) continue;
    inFlight.add(item.id);
    perWorkspace.set(item.workspaceId, busy + 1);
    chosen.push(item);
  }
  return chosen;
}
