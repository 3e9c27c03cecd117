import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { streamProcess, type StreamedProcess } from './sandbox-stream';

const shell = (command: string, timeoutMs = 10_000): StreamedProcess =>
  streamProcess({ file: '/bin/sh', args: ['-c', command], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } }, { stderrLimitBytes: 64, timeoutMs });

/** Gone, or a zombie waiting for init to reap it: either way no longer running. */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

async function waitUntilStopped(pid: number): Promise<boolean> {
  for (let attempt = 0; attempt < 100; attempt++) {
    if (!isRunning(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

async function firstLine(process: StreamedProcess): Promise<string> {
  let text = '';
  for await (const chunk of process.stdout) {
    text += String(chunk);
    if (text.includes('\n')) return text.split('\n')[0];
  }
  return text;
}

describe('streamProcess', () => {
  it('streams stdin to stdout with backpressure, captures stderr (capped) and the exit code', async () => {
    const running = shell('cat; echo "$(printf "x%.0s" $(seq 200))" >&2; exit 3');
    const input = randomBytes(4 * 1024 * 1024);
    const received: Buffer[] = [];
    running.stdout.on('data', (chunk: Buffer) => received.push(chunk));
    running.stdin.end(input);
    const exit = await running.finished;
    expect(Buffer.concat(received).equals(input)).toBe(true);
    expect([exit.exitCode, exit.stderr.length, exit.killed]).toEqual([3, 64, false]);
  });

  it('kills the whole group when asked, background jobs included, and says so', async () => {
    const running = shell('sleep 30 & echo $!; wait');
    const pid = Number(await firstLine(running));
    running.kill();
    const exit = await running.finished;
    expect([exit.exitCode, exit.killed]).toEqual([null, true]);
    expect(await waitUntilStopped(pid)).toBe(true);
  });

  it('leaves nothing running once the process exits, and ends at its ceiling', async () => {
    const leaving = shell('sleep 30 & echo $!');
    const pid = Number(await firstLine(leaving));
    await leaving.finished;
    expect(await waitUntilStopped(pid)).toBe(true);
    const stuck = shell('sleep 30', 200);
    const exit = await stuck.finished;
    expect(exit.killed).toBe(true);
  });
});
