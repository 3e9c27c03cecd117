/** Every chat response names its run (CONTRACT section 12). */
export const RUN_ID_HEADER = 'x-run-id';
