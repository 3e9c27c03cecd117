// One jest run for every project. Tests are native ESM (NestJS 12 ships ESM only), transformed by SWC
// with the same settings as the build; path aliases resolve through moduleNameMapper.
import { readFileSync } from 'node:fs';

const swcrc = JSON.parse(readFileSync(new URL('./.swcrc', import.meta.url), 'utf8'));
delete swcrc.exclude;
delete swcrc.$schema;
swcrc.module = { type: 'es6' };

const aliases = Object.fromEntries(
  Object.entries(swcrc.jsc.paths).map(([alias, [target]]) => [`^${alias}$`, `<rootDir>/${target}`]),
);
delete swcrc.jsc.paths;
delete swcrc.jsc.baseUrl;

export default {
  // Node's, deleting the JetStream streams of the NATS prefixes a test file made when the file ends (passed or not).
  testEnvironment: '<rootDir>/tools/test/test-environment.ts',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { ...swcrc, swcrc: false }] },
  moduleNameMapper: aliases,
  testMatch: ['<rootDir>/{apps,libs,tools}/**/*.spec.ts'],
  // Stops the run at once, with the package to install, when a tool the tests need is missing; opens the run's
  // ledger of NATS prefixes, whose streams the teardown deletes.
  globalSetup: '<rootDir>/tools/test/global-setup.ts',
  globalTeardown: '<rootDir>/tools/test/global-teardown.ts',
  // A test or hook that gives no number of its own: long enough for a whole platform's start (seven processes) while
  // the other worker starts its own on a 2-core machine (seen above 30 s), still an end to anything that hangs.
  testTimeout: 120000,
};
