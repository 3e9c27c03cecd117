#!/usr/bin/env node
/**
 * Lints the OpenAPI document with Redocly CLI under redocly.yaml and exits with its status.
 * `node tools/openapi/lint-openapi.mjs` lints the built document (dist/, so `npm run lint:openapi` builds first);
 * `node tools/openapi/lint-openapi.mjs <file.json>` lints a document already written out (the unit spec does).
 * Redocly runs offline: no telemetry, no update check, at most LINT_TIMEOUT_MS.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const LINT_TIMEOUT_MS = 120_000;
const root = fileURLToPath(new URL('../..', import.meta.url));

/** The document as the gateway serves it, from the build, written to a scratch file. */
async function dumpBuiltDocument(directory) {
  const contracts = pathToFileURL(join(root, 'dist/libs/contracts/src/openapi/index.js')).href;
  const { OPENAPI_DOCUMENT } = await import(contracts);
  const file = join(directory, 'openapi.json');
  writeFileSync(file, `${JSON.stringify(OPENAPI_DOCUMENT, null, 2)}\n`);
  return file;
}

const scratch = mkdtempSync(join(tmpdir(), 'interns-openapi-'));
try {
  const file = process.argv[2] ?? (await dumpBuiltDocument(scratch));
  const redocly = join(root, 'node_modules/@redocly/cli/bin/cli.js');
  const result = spawnSync(process.execPath, [redocly, 'lint', '--config', join(root, 'redocly.yaml'), '--format', 'stylish', file], {
    stdio: 'inherit',
    timeout: LINT_TIMEOUT_MS,
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', REDOCLY_SUPPRESS_NOTIFICATIONS: 'true' },
  });
  if (result.error !== undefined) console.error(`redocly lint did not finish: ${result.error.message}`);
  process.exitCode = result.status ?? 1;
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
