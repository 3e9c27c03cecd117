import 'reflect-metadata';
import { runAdmin } from './admin.cli';

const exitCode = await runAdmin(process.argv.slice(2), process.env, {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
process.exitCode = exitCode;
// Everything is closed by now; this only guards against a stray handle keeping a finished command alive.
setTimeout(() => process.exit(exitCode), 10000).unref();
