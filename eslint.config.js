import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

export default [
  { ignores: ['**/dist', '**/node_modules', '**/.data', '**/coverage', '**/.nx'] },
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@nx/enforce-module-boundaries': [
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
            { sourceTag: 'scope:service-shared', onlyDependOnLibsWithTags: ['scope:shared'] },
            { sourceTag: 'scope:admin', onlyDependOnLibsWithTags: ['scope:shared', 'scope:identity'] },
            { sourceTag: 'scope:identity', onlyDependOnLibsWithTags: ['scope:shared'] },
            { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: ['scope:shared'] },
            // Pure deciders: only the framework-free contracts, never anything with I/O.
            { sourceTag: 'type:domain', onlyDependOnLibsWithTags: ['type:contracts', 'type:domain'] },
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: ['type:contracts'] },
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:contracts', 'type:data-access', 'type:domain', 'type:testing'] },
          ],
        },
      ],
    },
  },
  {
    // Domain libs and contracts stay free of I/O and frameworks.
    files: ['libs/lifecycle-domain/**/*.ts', 'libs/runs-domain/**/*.ts', 'libs/contracts/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['@nestjs/*', 'typeorm', 'pg', 'nats', '@nats-io/*', 'node:fs', 'node:net', 'node:http', 'fastify'],
          message: 'domain and contract code does no I/O' },
      ] }],
    },
  },
];
