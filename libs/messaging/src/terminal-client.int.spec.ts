/**
 * The gateway's end of a terminal against a stand-in runs replica on a real broker: refusals come back as DomainErrors,
 * early output is not lost, credit is returned in steps as the client flushes, and a replica that stops answering
 * heartbeats closes the terminal (`runs_lost`). The real runs end is exercised in apps/runs/src/terminals.
 */
import { connect, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import {
  DomainError,
  subjectsFor,
  TERMINAL_INPUT_OPS,
  TERMINAL_OP_HEADER,
  TERMINAL_OUTPUT_OPS,
  TERMINAL_WINDOW_BYTES,
  type RpcRequestPacket,
  type TerminalOpenRequest,
} from '@interns/contracts';
import { testNatsPrefix } from '@interns/testing';
import { terminalHeaders, TerminalClient } from './terminal-client';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe('TerminalClient (the gateway end) against a stand-in runs replica', () => {
  const subjects = subjectsFor(testNatsPrefix()).runs;
  let nc: NatsConnection;
  let opener: Subscription;
  /** How the stand-in answers the next open: a refusal, or it holds the terminal (serving its input subject). */
  let answer: { refuse: string } | { hold: boolean } = { hold: true };
  const held = new Map<string, { input: Msg[]; subscription: Subscription }>();

  beforeAll(async () => {
    nc = await connect({ servers: NATS_URL });
    opener = nc.subscribe(subjects.terminalOpen, {
      callback: (error, msg) => {
        if (error) return;
        const packet = msg.json<RpcRequestPacket<TerminalOpenRequest>>();
        const { terminalId } = packet.data;
        if ('refuse' in answer) {
          msg.respond(JSON.stringify({ id: packet.id, err: { kind: 'service_error', reason: answer.refuse, message: 'refused by the stand-in' }, isDisposed: true }));
          return;
        }
        if (answer.hold) {
          const input: Msg[] = [];
          const subscription = nc.subscribe(subjects.terminalInput(terminalId), {
            callback: (failure, message) => {
              if (failure) return;
              input.push(message);
              if (message.headers?.get(TERMINAL_OP_HEADER) === TERMINAL_INPUT_OPS.heartbeat) message.respond('{}');
            },
          });
          held.set(terminalId, { input, subscription });
        }
        // Output before the reply: the gateway listens before it asks, so the prompt is not lost.
        nc.publish(subjects.terminalOutput(terminalId), 'prompt$ ', { headers: terminalHeaders(TERMINAL_OUTPUT_OPS.output) });
        msg.respond(JSON.stringify({ id: packet.id, response: { terminalId }, isDisposed: true }));
      },
    });
    await nc.flush();
  });

  afterAll(async () => {
    opener?.unsubscribe();
    for (const { subscription } of held.values()) subscription.unsubscribe();
    await nc?.drain();
  });

  const client = () => new TerminalClient(nc, subjects, { heartbeatMs: 100, livenessMs: 1000 });
  const options = { internId: '9d7c2f1e-0b0e-4a8e-9d43-3d7c2f1e9a10', memberId: 'member-ada', cols: 80, rows: 24 };
  const opsOf = (terminalId: string) => (held.get(terminalId)?.input ?? []).map((msg) => msg.headers?.get(TERMINAL_OP_HEADER));

  it("maps the runs side's refusal to a DomainError with its reason", async () => {
    answer = { refuse: 'limit_reached' };
    const failure = await client().openTerminal(options).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(DomainError);
    expect((failure as DomainError).reason).toBe('limit_reached');
  });

  it('hands output that came before the listener to it, sends input and resizes, and returns credit in steps', async () => {
    answer = { hold: true };
    const terminal = await client().openTerminal(options);
    const output: string[] = [];
    await sleep(50);
    terminal.onOutput((bytes) => output.push(bytes.toString('utf8')));
    expect(output).toEqual(['prompt$ ']);

    terminal.write('ls\r');
    terminal.resize(120, 40);
    expect(() => terminal.resize(0, 40)).toThrow(DomainError);
    // Flushing all that was received returns the credit at once.
    terminal.flushed(8);
    // A chunk of output well past a step, flushed a little at a time: credit goes back per step, not per call.
    nc.publish(subjects.terminalOutput(terminal.id), new Uint8Array(TERMINAL_WINDOW_BYTES), { headers: terminalHeaders(TERMINAL_OUTPUT_OPS.output) });
    await sleep(100);
    for (let i = 0; i < 64; i += 1) terminal.flushed(TERMINAL_WINDOW_BYTES / 64);
    await sleep(100);
    const input = held.get(terminal.id)?.input ?? [];
    const acks = input.filter((msg) => msg.headers?.get(TERMINAL_OP_HEADER) === TERMINAL_INPUT_OPS.ack).map((msg) => msg.json<{ flushed: number }>().flushed);
    expect(acks[0]).toBe(8);
    expect(acks.length).toBe(1 + 8);
    expect(acks.at(-1)).toBe(8 + TERMINAL_WINDOW_BYTES);
    const typed = input.find((msg) => msg.headers?.get(TERMINAL_OP_HEADER) === TERMINAL_INPUT_OPS.input);
    expect(typed?.string()).toBe('ls\r');
    const resize = input.find((msg) => msg.headers?.get(TERMINAL_OP_HEADER) === TERMINAL_INPUT_OPS.resize);
    expect(resize?.json()).toEqual({ cols: 120, rows: 40 });

    // The runs side closes it: the reason reaches every listener once.
    const reasons: string[] = [];
    terminal.onClose((reason) => reasons.push(reason));
    nc.publish(subjects.terminalOutput(terminal.id), JSON.stringify({ reason: 'idle' }), { headers: terminalHeaders(TERMINAL_OUTPUT_OPS.closed) });
    expect(await terminal.closed).toBe('idle');
    terminal.onClose((reason) => reasons.push(`late ${reason}`));
    expect(reasons).toEqual(['idle', 'late idle']);
    expect(opsOf(terminal.id)).toContain(TERMINAL_INPUT_OPS.heartbeat);
  });

  it('closes with runs_lost when no replica answers its heartbeat', async () => {
    answer = { hold: false };
    const terminal = await client().openTerminal(options);
    const startedAt = Date.now();
    expect(await terminal.closed).toBe('runs_lost');
    expect(Date.now() - startedAt).toBeLessThan(2000);
    // Closed: nothing more goes out.
    terminal.write('ignored');
    await terminal.close();
  });
});
