import { performance } from 'node:perf_hooks';
import { withTimeout } from '../shared/bench-kit';

/**
 * One keystroke-echo line: a byte stream to a shell's pseudo-terminal (through the door, or a local pty) that is
 * turned into `cat` in raw mode, so each byte sent comes back once, as it is, from a process on the far side of
 * the pty: what a key typed into readline or an editor costs, without a line editor's redraws in the way.
 */

/** A terminal's byte stream, whatever carries it. */
export interface TerminalStream {
  write(bytes: Buffer): void;
  onData(listener: (bytes: Buffer) => void): void;
  close(): Promise<void>;
}

/** Written as `RE""ADY` on the command line, so its echo is not mistaken for the command's output. */
const READY_COMMAND = 'stty raw -echo; echo RE""ADY; exec cat\r';
const READY_MARK = 'READY';
/** After the mark, the rest of its line (the newline) is let through before the first keystroke. */
const SETTLE_MS = 300;
const READY_TIMEOUT_MS = 20_000;
const ECHO_TIMEOUT_MS = 5_000;

export class EchoLine {
  private received = '';
  private waiting: { byte: string; startedAt: number; done: (ms: number) => void } | null = null;
  /** Bytes that were not the echo awaited: anything but 0 makes the figures suspect. */
  unexpectedBytes = 0;

  private constructor(
    readonly name: string,
    private readonly stream: TerminalStream,
  ) {
    stream.onData((bytes) => this.receive(bytes));
  }

  /** Waits for the shell, turns it into a raw `cat`, and waits for that. */
  static async open(name: string, stream: TerminalStream): Promise<EchoLine> {
    const line = new EchoLine(name, stream);
    stream.write(Buffer.from(READY_COMMAND));
    await line.until(READY_MARK, READY_TIMEOUT_MS);
    await new Promise((done) => setTimeout(done, SETTLE_MS));
    line.received = '';
    return line;
  }

  /** Sends one byte and resolves to the milliseconds until it came back. */
  keystroke(byte: string): Promise<number> {
    const echoed = new Promise<number>((done) => {
      this.waiting = { byte, startedAt: performance.now(), done };
    });
    this.stream.write(Buffer.from(byte));
    return withTimeout(echoed, ECHO_TIMEOUT_MS, `${this.name}: the echo of a keystroke`);
  }

  close(): Promise<void> {
    return this.stream.close();
  }

  private receive(bytes: Buffer): void {
    const at = performance.now();
    const waiting = this.waiting;
    if (waiting === null) {
      this.received += bytes.toString('latin1');
      return;
    }
    const text = bytes.toString('latin1');
    this.unexpectedBytes += text.length - (text.includes(waiting.byte) ? 1 : 0);
    if (!text.includes(waiting.byte)) return;
    this.waiting = null;
    waiting.done(at - waiting.startedAt);
  }

  private async until(needle: string, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (!this.received.includes(needle)) {
      if (Date.now() > deadline) throw new Error(`${this.name}: ${needle} not seen within ${ms} ms; the terminal printed: ${JSON.stringify(this.received)}`);
      await new Promise((done) => setTimeout(done, 20));
    }
  }
}
