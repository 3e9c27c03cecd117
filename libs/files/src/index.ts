export * from './publish-no-clobber';
export * from './move-legacy-file';
export * from './private-directory';
export * from './read-file-if-exists';
