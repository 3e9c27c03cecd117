import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

/**
 * Test code: specs, test helpers (libs/testing, each app's `src/testing/`, fixtures), benchmarks and the
 * repository's tools. None of it is built into dist/; only it may use the testing lib.
 */
const TEST_CODE = ['**/*.spec.ts', '**/*.fixture.ts', '**/testing/**', 'bench/**', 'tools/**'];

/** Production code importing test helpers: the testing lib (any entry point), a `testing` folder or a fixture. */
const TEST_HELPER_IMPORTS = {
  regex: '^@interns/testing(/|$)|(^|/)testing(/|$)|\\.fixture$',
  message: 'test helpers are for specs only; production code (built into dist/) must not import them',
};

/** The module boundaries; `testCode` lets every project use the `type:testing` lib as well. */
function moduleBoundaries({ testCode }) {
  const testing = testCode ? ['type:testing'] : [];
  return [
    'error',
    {
      enforceBuildableLibDependency: false,
      allow: [],
      banTransitiveDependencies: false,
      depConstraints: [
        // The gateway reaches intern and run data only through services over NATS.
        { sourceTag: 'scope:gateway', onlyDependOnLibsWithTags: ['scope:shared', 'scope:identity'],
          notDependOnLibsWithTags: ['type:domain'] },
        // scope:service-shared (the event store) serves the event-sourced services, never the gateway.
        { sourceTag: 'scope:lifecycle', onlyDependOnLibsWithTags: ['scope:shared', 'scope:service-shared', 'scope:lifecycle'] },
        { sourceTag: 'scope:runs', onlyDependOnLibsWithTags: ['scope:shared', 'scope:service-shared', 'scope:runs'] },
        { sourceTag: 'scope:analytics', onlyDependOnLibsWithTags: ['scope:shared', 'scope:service-shared', 'scope:analytics'] },
        { sourceTag: 'scope:webhooks', onlyDependOnLibsWithTags: ['scope:shared', 'scope:service-shared', 'scope:webhooks'] },
        // The egress proxy (and with it the only use of VAULT_MASTER_KEY) is the egress service's alone.
        { sourceTag: 'scope:egress', onlyDependOnLibsWithTags: ['scope:shared', 'scope:service-shared', 'scope:egress'] },
        { sourceTag: 'scope:service-shared', onlyDependOnLibsWithTags: ['scope:shared'] },
        { sourceTag: 'scope:admin', onlyDependOnLibsWithTags: ['scope:shared', 'scope:identity'] },
        // The command-line client is an API client like any other: the contracts' types and constants, nothing more.
        { sourceTag: 'scope:cli', onlyDependOnLibsWithTags: ['type:contracts', ...testing] },
        { sourceTag: 'scope:identity', onlyDependOnLibsWithTags: ['scope:shared'] },
        { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: ['scope:shared'] },
        // Pure deciders: only the framework-free contracts, never anything with I/O.
        { sourceTag: 'type:domain', onlyDependOnLibsWithTags: ['type:contracts', 'type:domain', ...testing] },
        { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: ['type:contracts', ...testing] },
        { sourceTag: 'type:data-access', onlyDependOnLibsWithTags: ['type:contracts', 'type:data-access', ...testing] },
        { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:contracts', 'type:data-access', 'type:domain', ...testing] },
        { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:contracts', 'type:data-access', 'type:testing'] },
      ],
    },
  ];
}

export default [
  { ignores: ['**/dist', '**/node_modules', '**/.data', '**/coverage', '**/.nx'] },
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parser: tseslint.parser },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@nx/enforce-module-boundaries': moduleBoundaries({ testCode: false }),
      'no-restricted-imports': ['error', { patterns: [TEST_HELPER_IMPORTS] }],
    },
  },
  {
    files: TEST_CODE,
    rules: {
      '@nx/enforce-module-boundaries': moduleBoundaries({ testCode: true }),
      'no-restricted-imports': 'off',
    },
  },
  {
    // The CLI talks to the platform over HTTP only: no framework, broker or database client in it.
    files: ['apps/cli/**/*.ts'],
    ignores: TEST_CODE,
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['@nestjs/*', 'typeorm', 'pg', 'nats', '@nats-io/*', 'fastify'],
          message: 'the CLI reaches the platform through its HTTP API only' },
        TEST_HELPER_IMPORTS,
      ] }],
    },
  },
  {
    // Domain libs and contracts stay free of I/O and frameworks (this replaces the options above for them).
    files: ['libs/lifecycle-domain/**/*.ts', 'libs/runs-domain/**/*.ts', 'libs/contracts/**/*.ts'],
    ignores: TEST_CODE,
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['@nestjs/*', 'typeorm', 'pg', 'nats', '@nats-io/*', 'node:fs', 'node:net', 'node:http', 'fastify'],
          message: 'domain and contract code does no I/O' },
        TEST_HELPER_IMPORTS,
      ] }],
    },
  },
  {
    // The console's browser code is bundled for the browser: no server lib, no Node module; it speaks to the API only.
    files: ['apps/console/src/app/**/*.{ts,tsx}', 'apps/console/src/main.tsx'],
    ignores: TEST_CODE,
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['@interns/*', 'node:*'], message: 'browser code: it talks to the API over HTTP and imports no server or Node code' },
        TEST_HELPER_IMPORTS,
      ] }],
    },
  },
];
