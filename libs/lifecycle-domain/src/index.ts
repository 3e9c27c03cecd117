export * from './intern/intern.events';
export * from './intern/intern.commands';
export * from './intern/intern.decider';

