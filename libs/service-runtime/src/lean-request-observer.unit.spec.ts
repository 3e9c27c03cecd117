import { currentCorrelationId } from '@interns/observability';
import type { LeanRequest } from '@interns/messaging';
import { observeLeanRequest } from './lean-request-observer';

const request = (entersRequestContext: boolean): LeanRequest => ({
  subject: 'test.runs.cmd.chat',
  correlationId: 'corr-lean-1',
  headers: undefined,
  entersRequestContext,
});

describe('observeLeanRequest (tracing off)', () => {
  it("runs a handler that asks for it inside the request's context: its log lines and further requests carry the id", async () => {
    await expect(observeLeanRequest(request(true), async () => currentCorrelationId())).resolves.toBe('corr-lean-1');
  });

  it('leaves a hot read outside any context', async () => {
    await expect(observeLeanRequest(request(false), async () => currentCorrelationId())).resolves.toBeUndefined();
  });
});
