/**
 * Prompts at the terminal (@inquirer/prompts), on the CLI's own streams: their text goes to stderr under `--json`
 * so stdout stays machine output. Without a terminal on stdin there is nobody to ask: a usage error names the
 * option that avoids the prompt.
 */
import { confirm, input, password, select } from '@inquirer/prompts';
import { CliError } from '../errors';
import type { Output } from '../output/output';

export class TerminalPrompts {
  constructor(private readonly output: Output) {}

  get available(): boolean {
    return this.output.io.stdin.isTTY === true;
  }

  private context(): { input: NodeJS.ReadableStream; output: NodeJS.WritableStream; clearPromptOnDone: boolean } {
    const { io, json } = this.output;
    return { input: io.stdin, output: json ? io.stderr : io.stdout, clearPromptOnDone: false };
  }

  /** Throws the usage error `why` when there is no terminal to ask at. */
  require(why: string): void {
    if (!this.available) throw CliError.usage(why);
  }

  confirm(message: string, defaultValue = false): Promise<boolean> {
    return confirm({ message, default: defaultValue }, this.context());
  }

  secret(message: string): Promise<string> {
    return password({ message, mask: true, validate: (value) => (value.length > 0 ? true : 'required') }, this.context());
  }

  text(message: string, options: { required?: boolean; validate?: (value: string) => true | string } = {}): Promise<string> {
    return input({ message, required: options.required, validate: options.validate }, this.context());
  }

  choose<T extends string>(message: string, choices: readonly { value: T; name: string }[]): Promise<T> {
    return select<T>({ message, choices: [...choices] }, this.context());
  }
}

/** Whether an error is the prompt's own Ctrl-C. */
export function isPromptExit(error: unknown): boolean {
  return error instanceof Error && (error.name === 'ExitPromptError' || error.name === 'AbortPromptError');
}
