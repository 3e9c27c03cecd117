import { gauge } from '@interns/service-runtime';

/** Readers following a run's chunk log (`GET .../runs/{id}/stream`) on this gateway. */
export const runStreamReaders = gauge({ name: 'interns_run_stream_readers', help: 'Run stream readers open on this gateway' });
