export * from './publish-no-clobber';
