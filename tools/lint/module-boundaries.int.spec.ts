/**
 * The module-boundary rules must really constrain: lint virtual files that break them and expect errors.
 * Runs ESLint with the repository's own configuration (the Nx project graph is built by `npm run lint`).
 */
import { execFileSync } from 'node:child_process';
import { ESLint } from 'eslint';

const eslint = new ESLint({ cwd: process.cwd() });

async function ruleIdsFor(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((message) => message.ruleId ?? message.message);
}

beforeAll(() => {
  // The boundary rule reads the cached Nx project graph; make sure it exists.
  execFileSync(process.execPath, ['node_modules/nx/dist/bin/nx.js', 'show', 'projects'], {
    env: { ...process.env, NX_DAEMON: 'false', NODE_OPTIONS: '' },
    stdio: 'ignore',
  });
});

describe('module boundaries', () => {
  it.each([
    ['the gateway importing a domain lib', 'apps/gateway/src/probe.ts', "import { decide } from '@interns/lifecycle-domain';\nexport { decide };\n"],
    ['the gateway importing the event store', 'apps/gateway/src/probe.ts', "import { PostgresEventStore } from '@interns/event-store';\nexport { PostgresEventStore };\n"],
    ['lifecycle importing the identity lib', 'apps/lifecycle/src/probe.ts', "import { hashApiKey } from '@interns/identity';\nexport { hashApiKey };\n"],
    ['a domain lib importing the event store', 'libs/lifecycle-domain/src/probe.ts', "import { PostgresEventStore } from '@interns/event-store';\nexport { PostgresEventStore };\n"],
    ['the command-line client importing the messaging lib', 'apps/cli/src/probe.ts', "import { RpcClient } from '@interns/messaging';\nexport { RpcClient };\n"],
  ])('refuses %s', async (_label, filePath, code) => {
    expect(await ruleIdsFor(filePath, code)).toContain('@nx/enforce-module-boundaries');
  });

  it('keeps the command-line client to the HTTP API: no broker, database or framework client', async () => {
    for (const module of ['@nats-io/transport-node', 'pg', '@nestjs/common']) {
      expect(await ruleIdsFor('apps/cli/src/probe.ts', `import * as probe from '${module}';\nexport { probe };\n`)).toContain('no-restricted-imports');
    }
    expect(await ruleIdsFor('apps/cli/src/probe.ts', "import { ERROR_REASONS } from '@interns/contracts';\nexport { ERROR_REASONS };\n")).toEqual([]);
  });

  it('refuses I/O imports in domain code', async () => {
    expect(await ruleIdsFor('libs/lifecycle-domain/src/probe.ts', "import pg from 'pg';\nexport { pg };\n")).toContain(
      'no-restricted-imports',
    );
  });

  it.each([
    ['the testing lib', 'apps/gateway/src/probe.ts', "import { freePort } from '@interns/testing';\nexport { freePort };\n"],
    ['the decider specs', 'libs/lifecycle-domain/src/probe.ts', "import { deciderSpec } from '@interns/testing/decider-spec';\nexport { deciderSpec };\n"],
    ["an app's testing folder", 'apps/gateway/src/probe.ts', "import { startGatewayHarness } from './testing/gateway.harness';\nexport { startGatewayHarness };\n"],
    ['a fixture', 'apps/gateway/src/probe.ts', "import { KEYS } from './e2e/keys.fixture';\nexport { KEYS };\n"],
  ])('refuses %s in production code', async (_label, filePath, code) => {
    expect(await ruleIdsFor(filePath, code)).toContain('no-restricted-imports');
  });

  it('lets specs and test helpers use the testing lib', async () => {
    expect(
      await ruleIdsFor(
        'libs/lifecycle-domain/src/probe.unit.spec.ts',
        "import { deciderSpec } from '@interns/testing/decider-spec';\nexport { deciderSpec };\n",
      ),
    ).toEqual([]);
    expect(
      await ruleIdsFor('apps/gateway/src/testing/probe.ts', "import { Platform } from '@interns/testing';\nexport { Platform };\n"),
    ).toEqual([]);
  });

  it('allows what the architecture allows', async () => {
    expect(
      await ruleIdsFor(
        'apps/gateway/src/probe.ts',
        "import { subjectsFor } from '@interns/contracts';\nimport { RpcClient } from '@interns/messaging';\nexport { subjectsFor, RpcClient };\n",
      ),
    ).toEqual([]);
  });
});
