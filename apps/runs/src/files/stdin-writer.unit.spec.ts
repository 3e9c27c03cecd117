import { spawn } from 'node:child_process';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { stdinWriter } from './stdin-writer';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

function startProcess(command: string) {
  const child = spawn('sh', ['-c', command], { stdio: ['pipe', 'ignore', 'ignore'] });
  child.stdin.on('error', () => undefined);
  const finished = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return { child, finished };
}

describe('stdinWriter', () => {
  it('holds no chunk once it is written: an upload never keeps its whole body in memory', async () => {
    const { child, finished } = startProcess('cat > /dev/null');
    try {
      const write = stdinWriter(child.stdin, finished);
      const firstChunk = new WeakRef(Buffer.alloc(1024 * 1024, 1));
      await expect(write(firstChunk.deref() as Buffer)).resolves.toBe(true);
      for (let index = 0; index < 8; index += 1) await expect(write(Buffer.alloc(64 * 1024, 2))).resolves.toBe(true);
      // A WeakRef's target is kept until the task that dereferenced it ends: one more task, then a full collection.
      await new Promise((resolve) => setImmediate(resolve));
      collectGarbage();
      // The upload is still open (its process runs): nothing but the writer could hold the first chunk now.
      expect(firstChunk.deref()).toBeUndefined();
    } finally {
      child.stdin.end();
      await finished;
    }
  });

  it('answers false, rather than waiting forever, once the process ended without reading', async () => {
    const { child, finished } = startProcess('exit 0');
    const write = stdinWriter(child.stdin, finished);
    await finished;
    await expect(write(Buffer.alloc(16))).resolves.toBe(false);
  });

  it('answers false for a write stuck in a full pipe when the process then ends', async () => {
    // The process reads nothing, so a write larger than the pipe cannot complete; its end must release the writer.
    const { child, finished } = startProcess('sleep 0.3');
    const write = stdinWriter(child.stdin, finished);
    await expect(write(Buffer.alloc(4 * 1024 * 1024))).resolves.toBe(false);
  });
});
