export * from './address-policy';
export * from './egress-ca';
export * from './egress-proxy';
export * from './egress-settings';
export * from './host-policy';
export * from './secret-release';
export * from './egress-types';
