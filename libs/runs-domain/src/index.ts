export * from './session/session.events';
export * from './session/session.commands';
export * from './session/session.decider';
export * from './session/shell-consent';
export * from './session/run-transcript';
export * from './session/run-endings';
export * from './session/transcript-text';
export * from './session/session.fold';
