export * from './signing-strings';
export * from './signing-key';
export * from './nonce-store';
export * from './invoke-verifier';
