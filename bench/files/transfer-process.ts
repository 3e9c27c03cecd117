import { fork } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { download, localCopy, type RemoteFile, streamedCopy, type Transfer, upload } from './transfer-client';

/**
 * Each transfer of `bench:files` (and each local copy it is compared with) runs in a node process of its own, as a
 * client on another machine would be: the benchmark's own process holds the platform's fixture (every service's log
 * lines) and a 100 MiB source buffer, and its full garbage collections, triggered by the 64 KiB buffers a stream
 * allocates, took a quarter of the machine's CPU while it moved bytes, from the very services being measured. The
 * child starts before the clock does: its time and its CPU (`process.cpuUsage`) are those of the move alone.
 */

export type Move =
  | { way: 'copy' | 'streamed copy'; source: string; destination: string }
  | { way: 'upload'; remote: RemoteFile; source: string; size: number }
  | { way: 'download'; remote: RemoteFile; destination: string };

export interface MoveResult {
  transfer: Transfer;
  /** CPU ms (user + system) the moving process spent on the move. */
  cpuMs: number;
}

function perform(move: Move): Promise<Transfer> {
  switch (move.way) {
    case 'copy':
      return localCopy(move.source, move.destination);
    case 'streamed copy':
      return streamedCopy(move.source, move.destination);
    case 'upload':
      return upload(move.remote, move.source, move.size);
    case 'download':
      return download(move.remote, move.destination);
  }
}

/** A fresh node process, started and ready: `move` runs one move in it (then it exits). */
export interface Mover {
  move(move: Move): Promise<MoveResult>;
}

/** Forks the moving process and waits until it is ready, so neither the clock nor the CPU figures count its start. */
export function startMover(): Promise<Mover> {
  return new Promise((resolveReady, rejectReady) => {
    const child = fork(fileURLToPath(import.meta.url), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let settle: { resolve(result: MoveResult): void; reject(error: Error): void } | null = null;
    child.once('error', rejectReady);
    child.on('exit', (code) => {
      const failure = new Error(`the transfer process exited with ${code} before answering`);
      rejectReady(failure);
      settle?.reject(failure);
    });
    child.on('message', (message: { ready?: true; result?: MoveResult; error?: string }) => {
      if (message.ready === true) {
        resolveReady({
          move: (move) =>
            new Promise((resolve, reject) => {
              settle = { resolve, reject };
              child.send(move);
            }),
        });
        return;
      }
      if (message.result !== undefined) settle?.resolve(message.result);
      else settle?.reject(new Error(message.error ?? 'the transfer process failed'));
      settle = null;
    });
  });
}

/** The child's end: says it is ready, runs one move, sends its result back, then exits. */
function serveOneMove(): void {
  process.once('message', (move: Move) => {
    const before = process.cpuUsage();
    perform(move).then(
      (transfer) => {
        const spent = process.cpuUsage(before);
        process.send?.({ result: { transfer, cpuMs: (spent.user + spent.system) / 1000 } }, () => process.exit(0));
      },
      (error: unknown) => process.send?.({ error: (error as Error).message }, () => process.exit(1)),
    );
  });
  process.send?.({ ready: true });
}

// Run as its own process: startMover forks this file.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) serveOneMove();
