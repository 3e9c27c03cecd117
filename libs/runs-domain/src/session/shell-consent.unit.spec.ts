import { DomainError } from '@interns/contracts';
import type { ApprovalMode, ErrorReason, PermissionQuestion } from '@interns/contracts';
import { evolve, initialState } from './session.decider';
import type { SessionEvent } from './session.events';
import { shellAnswer, shellConsent } from './shell-consent';
import type { ShellConsent } from './shell-consent';

const at = '2026-11-21T10:00:00.000Z';
const expiresAt = '2026-11-21T10:10:00.000Z';

const opened: SessionEvent = {
  type: 'SessionOpened',
  data: { sessionId: 'session-1', internId: 'intern-1', callerId: 'caller-1', origin: 'chat', at },
};

const started = (runId: string, approvalMode: ApprovalMode): SessionEvent => ({
  type: 'RunStarted',
  data: { runId, prompt: `prompt of ${runId}`, approvalMode, model: 'model-a', ownerId: 'owner-1', at },
});

const permissionFor = (command: string): PermissionQuestion => ({
  kind: 'permission',
  operation: `shell: ${command}`,
  options: ['allow_once', 'allow_always', 'reject_once', 'reject_always'],
});

/** run-1 asks about `rm x` as `toolCallId` and the caller answers `option`. */
const answered = (toolCallId: string, option: string): SessionEvent[] => [
  { type: 'QuestionAsked', data: { runId: 'run-1', toolCallId, question: permissionFor('rm x'), expiresAt } },
  { type: 'QuestionAnswered', data: { runId: 'run-1', toolCallId, answer: { kind: 'permission', option }, by: 'caller' } },
];

const finished = (runId: string): SessionEvent => ({
  type: 'RunFinished',
  data: { runId, finishReason: 'stop', error: null, usage: null, at },
});

/** `given(events).whenShellIsCalled(command).then(consent)`: the policy reads the state the decider evolves. */
const given = (events: SessionEvent[]) => ({
  whenShellIsCalled: (command: string, runId = 'run-1') => {
    const decide = () => shellConsent(events.reduce(evolve, initialState()), runId, command);
    return {
      then: (expected: ShellConsent) => expect(decide()).toEqual(expected),
      thenThrows: (reason: ErrorReason) => {
        expect(decide).toThrow(DomainError);
        expect(decide).toThrow(expect.objectContaining({ reason }));
      },
    };
  },
});

describe('shell consent', () => {
  describe('before anyone is asked', () => {
    it('runs the command of a self-drive run at once', () => {
      given([opened, started('run-1', 'self-drive')]).whenShellIsCalled('ls').then({ decision: 'run', consent: 'self-drive' });
    });

    it('asks the caller of a manual run, offering every permission option', () => {
      given([opened, started('run-1', 'manual')]).whenShellIsCalled('ls -la').then({ decision: 'ask', question: permissionFor('ls -la') });
    });

    it('runs under a standing allow_always, even in manual mode', () => {
      given([opened, started('run-1', 'manual'), ...answered('call-1', 'allow_always')])
        .whenShellIsCalled('ls')
        .then({ decision: 'run', consent: 'standing' });
    });

    it('refuses under a standing reject_always, even in self-drive mode', () => {
      given([opened, started('run-1', 'manual'), ...answered('call-1', 'reject_always'), finished('run-1'), started('run-2', 'self-drive')])
        .whenShellIsCalled('ls', 'run-2')
        .then({ decision: 'refuse', standing: true });
    });

    it('credits a standing allow over self-drive', () => {
      given([opened, started('run-1', 'manual'), ...answered('call-1', 'allow_always'), finished('run-1'), started('run-2', 'self-drive')])
        .whenShellIsCalled('ls', 'run-2')
        .then({ decision: 'run', consent: 'standing' });
    });

    it('follows the latest standing answer', () => {
      given([opened, started('run-1', 'manual'), ...answered('call-1', 'allow_always'), ...answered('call-2', 'reject_always')])
        .whenShellIsCalled('ls')
        .then({ decision: 'refuse', standing: true });
    });

    it('asks again after one-shot answers and cancel', () => {
      given([opened, started('run-1', 'manual'), ...answered('call-1', 'allow_once'), ...answered('call-2', 'reject_once'), ...answered('call-3', 'cancel')])
        .whenShellIsCalled('ls')
        .then({ decision: 'ask', question: permissionFor('ls') });
    });

    it('refuses to decide for a run that is not going', () => {
      given([opened]).whenShellIsCalled('ls').thenThrows('interaction_not_pending');
      given([opened, started('run-2', 'self-drive')]).whenShellIsCalled('ls').thenThrows('interaction_not_pending');
      given([opened, started('run-1', 'self-drive'), finished('run-1')]).whenShellIsCalled('ls').thenThrows('interaction_not_pending');
      given([]).whenShellIsCalled('ls').thenThrows('interaction_not_pending');
    });
  });

  describe('the answer of the caller', () => {
    it('runs the command on allow_once and allow_always', () => {
      expect(shellAnswer({ kind: 'permission', option: 'allow_once' })).toEqual({ decision: 'run', consent: 'caller' });
      expect(shellAnswer({ kind: 'permission', option: 'allow_always' })).toEqual({ decision: 'run', consent: 'caller' });
    });

    it('refuses the command on reject_once and reject_always', () => {
      expect(shellAnswer({ kind: 'permission', option: 'reject_once' })).toEqual({ decision: 'refuse', standing: false });
      expect(shellAnswer({ kind: 'permission', option: 'reject_always' })).toEqual({ decision: 'refuse', standing: false });
    });

    it('ends the run on cancel', () => {
      expect(shellAnswer({ kind: 'permission', option: 'cancel' })).toEqual({ decision: 'cancel' });
    });

    it('never runs the command on anything that is not an allow option', () => {
      expect(shellAnswer({ kind: 'permission', option: 'yes' })).toEqual({ decision: 'refuse', standing: false });
      expect(shellAnswer({ kind: 'elicitation', answer: { action: 'decline' } })).toEqual({ decision: 'refuse', standing: false });
    });
  });
});
