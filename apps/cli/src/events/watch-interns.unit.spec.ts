import { describeEvent } from './watch-interns';

const event = (type: string, data: Record<string, unknown>) => ({ id: 'e', type, created_at: '2030-01-01T12:00:01.000Z', workspace_id: 'w', data });

describe('describeEvent', () => {
  it('tells a status change with its step and the status it left', () => {
    const changed = event('intern.status_changed', {
      intern_id: 'i',
      status: 'provisioning',
      previous_status: 'queued',
      progress: { step_label: 'Assigning hostname', step_number: 2, total_steps: 4 },
    });
    expect(describeEvent(changed, 'ada')).toBe('12:00:01  ada  provisioning 2/4 Assigning hostname (was queued)');
    expect(describeEvent(event('intern.status_changed', { status: 'running', previous_status: 'provisioning', progress: null }), 'ada')).toBe(
      '12:00:01  ada  running (was provisioning)',
    );
  });

  it('tells runs ending and questions opening, and names any other type', () => {
    expect(describeEvent(event('run.failed', { run_id: 'r1', finish_reason: 'error' }), 'ada')).toBe('12:00:01  ada  run r1 failed (error)');
    expect(describeEvent(event('question.opened', { run_id: 'r1', arguments: { kind: 'permission', operation: 'shell: ls' } }), 'ada')).toBe(
      '12:00:01  ada  run r1 asks: permission for shell: ls',
    );
    expect(describeEvent(event('question.opened', { run_id: 'r1', arguments: { kind: 'elicitation', message: 'Name?' } }), 'ada')).toBe('12:00:01  ada  run r1 asks: Name?');
    expect(describeEvent(event('intern.deleted', {}), '-')).toBe('12:00:01  -  intern.deleted');
  });
});
