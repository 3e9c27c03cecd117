export * from './session/session.events';
export * from './session/session.commands';
export * from './session/session.decider';
export * from './session/shell-consent';
export * from './session/run-transcript';
export * from './session/run-status';
export * from './session/transcript-text';
