import { spawn } from '@lydell/node-pty';
import { WebSocket } from 'ws';
import type { TerminalStream } from './echo-line';

/** The two ends the benchmark types into: the door's WebSocket, and a pty of its own process. */

export interface Door {
  /** `ws://127.0.0.1:<gateway port>`. */
  gatewayWsUrl: string;
  hostname: string;
  daemonToken: string;
}

/** The door's terminal (interface section 20): the intern's hostname as `Host`, its daemon token as bearer. */
export function doorTerminal(door: Door): Promise<TerminalStream> {
  const socket = new WebSocket(`${door.gatewayWsUrl}/api/terminal`, {
    headers: { host: door.hostname, authorization: `Bearer ${door.daemonToken}` },
  });
  const closed = new Promise<void>((done) => socket.once('close', () => done()));
  return new Promise((resolve, reject) => {
    socket.once('open', () =>
      resolve({
        write: (bytes) => socket.send(bytes),
        onData: (listener) => socket.on('message', (data: Buffer) => listener(data)),
        close: async () => {
          socket.close();
          await closed;
        },
      }),
    );
    socket.once('unexpected-response', (_request, response) => reject(new Error(`the door refused the terminal: ${response.statusCode}`)));
    socket.once('error', reject);
  });
}

/** `/bin/bash` on a pty in this process, no profile: the baseline, with nothing between the bench and the pty. */
export function localTerminal(cwd: string): TerminalStream {
  const pty = spawn('/bin/bash', ['--noprofile', '--norc'], { name: 'xterm-256color', cols: 80, rows: 24, cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TERM: 'xterm-256color' } });
  const exited = new Promise<void>((done) => pty.onExit(() => done()));
  return {
    write: (bytes) => pty.write(bytes.toString()),
    onData: (listener) => pty.onData((data) => listener(Buffer.from(data))),
    close: async () => {
      pty.kill();
      await exited;
    },
  };
}
