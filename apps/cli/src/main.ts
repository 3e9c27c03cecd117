#!/usr/bin/env node
/** `interns` (the package's bin; `npm run interns -- <command>` from a clone). Exit codes: docs/cli.md. */
import { runCli } from './cli';

const code = await runCli(process.argv.slice(2), process.env, { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
process.exitCode = code;
// Streams and sockets are closed by now; this only keeps a stray handle from holding a finished command open.
setTimeout(() => process.exit(code), 2000).unref();
