/**
 * Redocly CLI lints the OpenAPI document (the one built from source here, as the gateway serves it) under
 * redocly.yaml with no error and no warning, through the script `npm run lint:openapi` runs. A document that
 * breaks a rule fails it, so the check can fail.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OPENAPI_DOCUMENT } from '@interns/contracts/openapi';

const script = fileURLToPath(new URL('./lint-openapi.mjs', import.meta.url));
const LINT_TIMEOUT_MS = 60_000;
let scratch: string;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'openapi-lint-spec-'));
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function lint(document: unknown, name: string): { status: number | null; output: string } {
  const file = join(scratch, `${name}.json`);
  writeFileSync(file, JSON.stringify(document));
  const result = spawnSync(process.execPath, [script, file], { encoding: 'utf8', timeout: LINT_TIMEOUT_MS, env: { ...process.env, NO_COLOR: '1' } });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** The findings of redocly's stylish format: `<line>:<column>  <severity>  <rule>  <message>`. */
function findings(output: string): string[] {
  return output.split('\n').filter((line) => /^\s+\d+:\d+\s+(error|warning)\s/.test(line));
}

it('passes with no error and no warning', () => {
  const { status, output } = lint(OPENAPI_DOCUMENT, 'served');
  expect({ status, findings: findings(output) }).toEqual({ status: 0, findings: [] });
  expect(output).toContain('Your API description is valid');
}, LINT_TIMEOUT_MS + 5_000);

it('fails a document that breaks a rule, naming it', () => {
  const broken = structuredClone(OPENAPI_DOCUMENT) as unknown as { paths: Record<string, { get?: { operationId?: string } }> };
  delete broken.paths['/interns']?.get?.operationId;
  const { status, output } = lint(broken, 'broken');
  expect(status).toBe(1);
  expect(findings(output)).toEqual([expect.stringMatching(/error\s+operation-operationId\s/)]);
}, LINT_TIMEOUT_MS + 5_000);
