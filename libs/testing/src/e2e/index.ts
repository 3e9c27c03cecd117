/**
 * The fixtures of the end-to-end specs of every app (`apps/<app>/src/e2e/`): the identities the platform's
 * apply file holds, chat and run requests and their streams, an intern's terminal. An entry point of its own
 * (`@interns/testing/e2e`): the lib's index is the kit any spec uses; these assume a whole platform's data.
 */
export * from './platform-identities.fixture';
export * from './chat.fixture';
export * from './runs.fixture';
export * from './terminal.fixture';
