export * from './metrics-registry';
export * from './metric-labels';
