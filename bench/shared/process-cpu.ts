import { readFileSync } from 'node:fs';

/** Linux's USER_HZ: /proc reports CPU time in these ticks (100 on every mainstream kernel). */
const TICKS_PER_SECOND = 100;

/** CPU time (user + system) a process has used so far, in ms, from /proc/<pid>/stat; 10 ms resolution. */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const userTicks = Number(fields[11]);
  const systemTicks = Number(fields[12]);
  return ((userTicks + systemTicks) * 1000) / TICKS_PER_SECOND;
}

/** CPU time the whole machine has been busy so far (all cores, everything but idle and iowait), in ms. */
export function machineBusyCpuMs(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] as string;
  const ticks = line.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = ticks;
  return ((user + nice + system + irq + softirq + steal) * 1000) / TICKS_PER_SECOND;
}

/** CPU ms used per process (and by the whole machine) while `work` ran. */
export async function measureCpu<T>(
  pids: Record<string, number>,
  work: () => Promise<T>,
): Promise<{ result: T; cpuMs: Record<string, number> }> {
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, processCpuMs(pid)]));
  const machineBefore = machineBusyCpuMs();
  const result = await work();
  const cpuMs: Record<string, number> = { machine: machineBusyCpuMs() - machineBefore };
  for (const [name, pid] of Object.entries(pids)) cpuMs[name] = processCpuMs(pid) - (before[name] as number);
  return { result, cpuMs };
}
