export * from './intern/intern.events';
export * from './intern/intern.commands';
export * from './intern/intern.decider';

export * from './intern/intern.upcasters';
export * from './intern/intern.fold';
