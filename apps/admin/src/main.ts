import 'reflect-metadata';
import { createInterface } from 'node:readline/promises';
import { runAdmin } from './admin.cli';
import { errorLine } from './admin.errors';
import { environmentWithEnvFile } from './env-file';

/** A question at the terminal left unanswered this long is answered no. */
const CONFIRM_TIMEOUT_MS = 5 * 60_000;

/** Asks on stderr (stdout keeps the command's output); `y` or `yes` confirms, anything else (or Ctrl-C, or silence) does not. */
async function confirmAtTerminal(question: string): Promise<boolean> {
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await prompt.question(`${question} [y/N] `, { signal: AbortSignal.timeout(CONFIRM_TIMEOUT_MS) });
    return /^y(es)?$/i.test(answer.trim());
  } catch {
    return false;
  } finally {
    prompt.close();
  }
}

let exitCode: number;
try {
  const { env, file } = environmentWithEnvFile(process.env);
  const atTerminal = process.stdin.isTTY === true && process.stderr.isTTY === true;
  exitCode = await runAdmin(process.argv.slice(2), env, {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    ...(atTerminal ? { confirm: confirmAtTerminal } : {}),
    envFile: file,
  });
} catch (error) {
  // An unreadable .env: one line, as any other error.
  process.stderr.write(`error: ${errorLine(error)}\n`);
  exitCode = 1;
}
process.exitCode = exitCode;
// Everything is closed by now; this only guards against a stray handle keeping a finished command alive.
setTimeout(() => process.exit(exitCode), 10000).unref();
