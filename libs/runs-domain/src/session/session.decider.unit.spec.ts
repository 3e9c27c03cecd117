// Longer than 300 lines on purpose: every transition of the session decider, given/when/then, beside each other.
import { DomainError } from '@interns/contracts';
import type { ElicitationQuestion, PermissionQuestion, Question } from '@interns/contracts';
import { deciderSpec } from '@interns/testing/decider-spec';
import type { SessionCommand } from './session.commands';
import { RUN_ENDINGS } from './run-endings';
import type { RunEndingReason } from './run-endings';
import { decide, evolve, initialState, runUsage } from './session.decider';
import type { SessionOpenState, SessionState } from './session.decider';
import type { QuestionAnswered, QuestionAsked, RunProgressEvent, RunStarted, SessionEvent, SessionOpened } from './session.events';

const spec = deciderSpec({ initialState, evolve, decide });
const given = (events: SessionEvent[]) => spec.given(events);

const stateAfter = (events: SessionEvent[]): SessionState => events.reduce(evolve, initialState());
const openStateAfter = (events: SessionEvent[]): SessionOpenState => {
  const state = stateAfter(events);
  if (state.kind !== 'open') throw new Error('expected an open session');
  return state;
};

const at = '2026-11-21T10:00:00.000Z';
const later = '2026-11-21T10:05:00.000Z';
const expiresAt = '2026-11-21T10:10:00.000Z';

const opened: SessionOpened = {
  type: 'SessionOpened',
  data: { sessionId: 'session-1', internId: 'intern-1', callerId: 'caller-1', origin: 'chat', at },
};

const started = (runId: string, prompt = `prompt of ${runId}`): RunStarted => ({
  type: 'RunStarted',
  data: { runId, prompt, approvalMode: 'manual', model: 'model-a', ownerId: 'owner-1', origin: 'chat', at },
});

const permission: PermissionQuestion = {
  kind: 'permission',
  operation: 'shell: ls -la',
  options: ['allow_once', 'allow_always', 'reject_once', 'reject_always'],
};

/** Offers only the one-shot options, so `allow_always` is an answer not offered. */
const narrowPermission: PermissionQuestion = { kind: 'permission', operation: 'shell: rm x', options: ['allow_once', 'reject_once'] };

const elicitation: ElicitationQuestion = {
  kind: 'elicitation',
  message: 'who are you?',
  fields: [
    { name: 'name', type: 'string', required: true },
    { name: 'age', type: 'integer', required: true },
    { name: 'subscribed', type: 'boolean', required: false },
    { name: 'score', type: 'number', required: false },
  ],
};

const asked = (runId: string, toolCallId: string, question: Question): QuestionAsked => ({
  type: 'QuestionAsked',
  data: { runId, toolCallId, question, expiresAt },
});

const permissionAnswered = (runId: string, toolCallId: string, option: string): QuestionAnswered => ({
  type: 'QuestionAnswered',
  data: { runId, toolCallId, answer: { kind: 'permission', option }, by: 'caller' },
});

const usage = (runId: string, promptTokens: number, completionTokens: number): RunProgressEvent => ({
  type: 'UsageRecorded',
  data: { runId, promptTokens, completionTokens },
});

const output = (runId: string, text: string): RunProgressEvent => ({ type: 'OutputProduced', data: { runId, text } });

const answer = (toolCallId: string, raw: string, by: 'caller' | 'fallback' = 'caller'): SessionCommand => ({
  type: 'AnswerQuestion',
  toolCallId,
  raw,
  by,
});

const startRun = (runId: string): SessionCommand => ({
  type: 'StartRun',
  runId,
  prompt: `prompt of ${runId}`,
  approvalMode: 'manual',
  model: 'model-a',
  ownerId: 'owner-1',
  origin: 'chat',
  at,
});

const finishRun = (runId: string): SessionCommand => ({ type: 'FinishRun', runId, error: null, at: later });

/** A session whose run-1 waits on call-1. */
const waitingOn = (question: Question): SessionEvent[] => [opened, started('run-1'), asked('run-1', 'call-1', question)];

const elicitationAnswered = (raw: string): SessionEvent[] => decide(answer('call-1', raw), stateAfter(waitingOn(elicitation)));

describe('session decider', () => {
  describe('OpenSession', () => {
    const open: SessionCommand = { type: 'OpenSession', ...opened.data };

    it('opens a session from nothing', () => {
      given([]).when(open).then([opened]);
      expect(stateAfter([opened])).toEqual({
        kind: 'open',
        sessionId: 'session-1',
        internId: 'intern-1',
        callerId: 'caller-1',
        origin: 'chat',
        activeRun: null,
        endedRun: null,
        questions: {},
        standingShellPermission: null,
        runCount: 0,
      });
    });

    it('refuses to open a session id that is taken', () => {
      given([opened]).when(open).thenThrows('not_found');
      given([opened, started('run-1')]).when({ ...open, internId: 'intern-2', callerId: 'caller-2' }).thenThrows('not_found');
    });
  });

  describe('StartRun', () => {
    it('starts a run in an idle session', () => {
      given([opened]).when(startRun('run-1')).then([started('run-1')]);
      expect(openStateAfter([opened, started('run-1')])).toMatchObject({
        runCount: 1,
        activeRun: { runId: 'run-1', approvalMode: 'manual', model: 'model-a', ownerId: 'owner-1', startedAt: at, openQuestion: null },
      });
    });

    it('answers not_found when the session does not exist', () => {
      given([]).when(startRun('run-1')).thenThrows('not_found');
    });

    it('refuses a second run while one is going', () => {
      given([opened, started('run-1')]).when(startRun('run-2')).thenThrows('busy');
    });

    it('refuses a second run while the going one waits on a question', () => {
      given(waitingOn(permission)).when(startRun('run-2')).thenThrows('busy');
    });

    it('starts the next run once the previous finished or was cancelled', () => {
      const finished = decide(finishRun('run-1'), stateAfter([opened, started('run-1')]));
      given([opened, started('run-1'), ...finished]).when(startRun('run-2')).then([started('run-2')]);
      given([opened, started('run-1'), { type: 'RunCancelled', data: { runId: 'run-1', reason: 'client_disconnected', at } }])
        .when(startRun('run-2'))
        .then([started('run-2')]);
      expect(openStateAfter([opened, started('run-1'), ...finished, started('run-2')]).runCount).toBe(2);
    });
  });

  describe('JoinPrompt', () => {
    const join: SessionCommand = { type: 'JoinPrompt', text: 'also check y', at: later };

    it('joins the prompt to the going run', () => {
      given([opened, started('run-1')])
        .when(join)
        .then([{ type: 'PromptJoined', data: { runId: 'run-1', text: 'also check y', at: later } }]);
    });

    it('joins a run that waits on a question too', () => {
      given(waitingOn(permission))
        .when(join)
        .then([{ type: 'PromptJoined', data: { runId: 'run-1', text: 'also check y', at: later } }]);
    });

    it('refuses when no run is going', () => {
      given([opened]).when(join).thenThrows('interaction_not_pending');
      const finished = decide(finishRun('run-1'), stateAfter([opened, started('run-1')]));
      given([opened, started('run-1'), ...finished]).when(join).thenThrows('interaction_not_pending');
    });

    it('answers not_found when the session does not exist', () => {
      given([]).when(join).thenThrows('not_found');
    });
  });

  describe('RecordProgress', () => {
    const progress: RunProgressEvent[] = [
      { type: 'ModelRequested', data: { runId: 'run-1', turn: 1, at } },
      output('run-1', 'hello'),
      { type: 'ToolCalled', data: { runId: 'run-1', toolCallId: 't-1', tool: 'shell', arguments: '{"cmd":"ls"}', consent: 'self-drive' } },
      { type: 'ToolCompleted', data: { runId: 'run-1', toolCallId: 't-1', result: 'a b' } },
      { type: 'ToolRefused', data: { runId: 'run-1', toolCallId: 't-2', tool: 'shell', arguments: '{"cmd":"rm"}', result: 'refused' } },
      usage('run-1', 10, 5),
    ];

    it('records the progress of the going run as given', () => {
      given([opened, started('run-1')]).when({ type: 'RecordProgress', runId: 'run-1', events: progress }).then(progress);
      given([opened, started('run-1')]).when({ type: 'RecordProgress', runId: 'run-1', events: [] }).then([]);
    });

    it('refuses progress for a run that is not the going one', () => {
      given([opened, started('run-2')])
        .when({ type: 'RecordProgress', runId: 'run-1', events: [output('run-1', 'late')] })
        .thenThrows('interaction_not_pending');
      given([opened]).when({ type: 'RecordProgress', runId: 'run-1', events: [output('run-1', 'late')] }).thenThrows('interaction_not_pending');
    });

    it('rejects events of another run or events that are not progress as a programming error', () => {
      const state = stateAfter([opened, started('run-1')]);
      expect(() => decide({ type: 'RecordProgress', runId: 'run-1', events: [output('run-2', 'x')] }, state)).toThrow(
        'OutputProduced is not progress of run run-1',
      );
      const smuggled = { type: 'RunCancelled', data: { runId: 'run-1', reason: 'owner_lost', at } } as unknown as RunProgressEvent;
      expect(() => decide({ type: 'RecordProgress', runId: 'run-1', events: [smuggled] }, state)).toThrow(
        'RunCancelled is not progress of run run-1',
      );
    });
  });

  describe('AskQuestion', () => {
    const ask = (runId: string, toolCallId: string): SessionCommand => ({ type: 'AskQuestion', runId, toolCallId, question: permission, expiresAt });

    it('asks a question of the going run', () => {
      given([opened, started('run-1')]).when(ask('run-1', 'call-1')).then([asked('run-1', 'call-1', permission)]);
      const state = openStateAfter(waitingOn(permission));
      expect(state.activeRun?.openQuestion).toBe('call-1');
      expect(state.questions['call-1']).toEqual({ runId: 'run-1', question: permission, status: 'open' });
    });

    it('refuses a question for a run that is not going', () => {
      given([opened, started('run-2')]).when(ask('run-1', 'call-1')).thenThrows('interaction_not_pending');
      given([opened]).when(ask('run-1', 'call-1')).thenThrows('interaction_not_pending');
    });

    it('rejects a second open question of the same run as a programming error', () => {
      expect(() => decide(ask('run-1', 'call-2'), stateAfter(waitingOn(permission)))).toThrow('run run-1 already waits on question call-1');
    });

    it('asks the next question once the previous was answered', () => {
      given([...waitingOn(permission), permissionAnswered('run-1', 'call-1', 'allow_once')])
        .when(ask('run-1', 'call-2'))
        .then([asked('run-1', 'call-2', permission)]);
    });
  });

  describe('AnswerQuestion', () => {
    it('records an offered permission option, trimmed', () => {
      given(waitingOn(permission)).when(answer('call-1', ' allow_once\n')).then([permissionAnswered('run-1', 'call-1', 'allow_once')]);
      const state = openStateAfter([...waitingOn(permission), permissionAnswered('run-1', 'call-1', 'allow_once')]);
      expect(state.questions['call-1'].status).toBe('answered');
      expect(state.activeRun?.openQuestion).toBeNull();
      expect(state.standingShellPermission).toBeNull();
    });

    it('accepts `cancel` for a permission question even though it is not an offered option', () => {
      given(waitingOn(narrowPermission)).when(answer('call-1', 'cancel')).then([permissionAnswered('run-1', 'call-1', 'cancel')]);
    });

    it('keeps who answered', () => {
      given(waitingOn(elicitation))
        .when(answer('call-1', '{"action":"decline"}', 'fallback'))
        .then([
          { type: 'QuestionAnswered', data: { runId: 'run-1', toolCallId: 'call-1', answer: { kind: 'elicitation', answer: { action: 'decline' } }, by: 'fallback' } },
        ]);
    });

    it('answers interaction_unknown for a tool call id that names no question', () => {
      given(waitingOn(permission)).when(answer('call-9', 'allow_once')).thenThrows('interaction_unknown');
      given([opened]).when(answer('call-1', 'allow_once')).thenThrows('interaction_unknown');
    });

    it('answers not_found when the session does not exist', () => {
      given([]).when(answer('call-1', 'allow_once')).thenThrows('not_found');
    });

    it('refuses a question that was already answered', () => {
      given([...waitingOn(permission), permissionAnswered('run-1', 'call-1', 'allow_once')])
        .when(answer('call-1', 'allow_once'))
        .thenThrows('interaction_not_pending');
    });

    it('refuses a question that expired', () => {
      const expired = decide({ type: 'ExpireQuestion', toolCallId: 'call-1', at: later }, stateAfter(waitingOn(permission)));
      given([...waitingOn(permission), ...expired]).when(answer('call-1', 'allow_once')).thenThrows('interaction_not_pending');
      // The expiry alone closes it, before the cancellation is applied.
      given([...waitingOn(permission), expired[0]]).when(answer('call-1', 'allow_once')).thenThrows('interaction_not_pending');
    });

    it('refuses the question of a run that was cancelled or finished', () => {
      given([...waitingOn(permission), { type: 'RunCancelled', data: { runId: 'run-1', reason: 'client_disconnected', at: later } }])
        .when(answer('call-1', 'allow_once'))
        .thenThrows('interaction_not_pending');
      given([...waitingOn(permission), ...decide(finishRun('run-1'), stateAfter(waitingOn(permission)))])
        .when(answer('call-1', 'allow_once'))
        .thenThrows('interaction_not_pending');
      expect(openStateAfter([...waitingOn(permission), { type: 'RunCancelled', data: { runId: 'run-1', reason: 'intern_suspended', at } }]).questions['call-1'].status).toBe(
        'closed',
      );
    });

    it('refuses the question of an earlier run from within a later one', () => {
      const history: SessionEvent[] = [
        ...waitingOn(permission),
        { type: 'RunCancelled', data: { runId: 'run-1', reason: 'caller_cancelled', at } },
        started('run-2'),
      ];
      given(history).when(answer('call-1', 'allow_once')).thenThrows('interaction_not_pending');
    });

    it('refuses a permission answer that was not offered, and leaves the question open', () => {
      given(waitingOn(narrowPermission)).when(answer('call-1', 'allow_always')).thenThrows('invalid_body');
      given(waitingOn(narrowPermission)).when(answer('call-1', 'yes')).thenThrows('invalid_body');
      given(waitingOn(narrowPermission)).when(answer('call-1', '')).thenThrows('invalid_body');
      // A refusal records nothing, so the same history still takes a valid answer.
      given(waitingOn(narrowPermission)).when(answer('call-1', 'reject_once')).then([permissionAnswered('run-1', 'call-1', 'reject_once')]);
    });

    describe('standing shell permission', () => {
      const standingAfter = (...options: string[]): SessionOpenState['standingShellPermission'] => {
        const events: SessionEvent[] = [opened, started('run-1')];
        options.forEach((option, index) => {
          const toolCallId = `call-${index + 1}`;
          events.push(asked('run-1', toolCallId, permission));
          events.push(...decide(answer(toolCallId, option), stateAfter(events)));
        });
        return openStateAfter(events).standingShellPermission;
      };

      it('allow_always and reject_always stand for the rest of the session', () => {
        expect(standingAfter('allow_always')).toBe('allow');
        expect(standingAfter('reject_always')).toBe('reject');
      });

      it('one-shot answers and cancel leave it unset or as it was', () => {
        expect(standingAfter('allow_once', 'reject_once', 'cancel')).toBeNull();
        expect(standingAfter('allow_always', 'reject_once')).toBe('allow');
      });

      it('the latest standing answer wins', () => {
        expect(standingAfter('allow_always', 'reject_always')).toBe('reject');
        expect(standingAfter('reject_always', 'allow_always')).toBe('allow');
      });

      it('outlives the run that set it', () => {
        const events: SessionEvent[] = [
          ...waitingOn(permission),
          permissionAnswered('run-1', 'call-1', 'reject_always'),
          { type: 'RunFinished', data: { runId: 'run-1', finishReason: 'stop', error: null, usage: null, at } },
          started('run-2'),
        ];
        expect(openStateAfter(events).standingShellPermission).toBe('reject');
      });
    });

    describe('elicitation', () => {
      const accepted = (content: Record<string, unknown>): SessionEvent[] => [
        {
          type: 'QuestionAnswered',
          data: { runId: 'run-1', toolCallId: 'call-1', answer: { kind: 'elicitation', answer: { action: 'accept', content } }, by: 'caller' },
        },
      ];

      it('accepts content that fills the required fields with values of their types', () => {
        const content = { name: 'ada', age: 36, subscribed: true, score: 9.5 };
        given(waitingOn(elicitation)).when(answer('call-1', JSON.stringify({ action: 'accept', content }))).then(accepted(content));
        given(waitingOn(elicitation))
          .when(answer('call-1', '{"action":"accept","content":{"name":"ada","age":36,"score":null}}'))
          .then(accepted({ name: 'ada', age: 36, score: null }));
      });

      it('refuses accepted content with a required field missing or null', () => {
        given(waitingOn(elicitation)).when(answer('call-1', '{"action":"accept","content":{"name":"ada"}}')).thenThrows('invalid_body');
        given(waitingOn(elicitation)).when(answer('call-1', '{"action":"accept","content":{"name":null,"age":1}}')).thenThrows('invalid_body');
        given(waitingOn(elicitation)).when(answer('call-1', '{"action":"accept"}')).thenThrows('invalid_body');
      });

      it('refuses accepted content with a value of the wrong type', () => {
        given(waitingOn(elicitation)).when(answer('call-1', '{"action":"accept","content":{"name":"ada","age":"36"}}')).thenThrows('invalid_body');
        given(waitingOn(elicitation)).when(answer('call-1', '{"action":"accept","content":{"name":"ada","age":36.5}}')).thenThrows('invalid_body');
        given(waitingOn(elicitation)).when(answer('call-1', '{"action":"accept","content":{"name":7,"age":36}}')).thenThrows('invalid_body');
        given(waitingOn(elicitation))
          .when(answer('call-1', '{"action":"accept","content":{"name":"ada","age":36,"subscribed":"yes"}}'))
          .thenThrows('invalid_body');
        given(waitingOn(elicitation))
          .when(answer('call-1', '{"action":"accept","content":{"name":"ada","age":36,"score":"high"}}'))
          .thenThrows('invalid_body');
      });

      it('records decline and cancel', () => {
        expect(elicitationAnswered('{"action":"decline"}')).toEqual([
          { type: 'QuestionAnswered', data: { runId: 'run-1', toolCallId: 'call-1', answer: { kind: 'elicitation', answer: { action: 'decline' } }, by: 'caller' } },
        ]);
        expect(elicitationAnswered('{"action":"cancel"}')).toEqual([
          { type: 'QuestionAnswered', data: { runId: 'run-1', toolCallId: 'call-1', answer: { kind: 'elicitation', answer: { action: 'cancel' } }, by: 'caller' } },
        ]);
      });

      it('refuses malformed JSON and answers that are not an action', () => {
        for (const raw of ['{"action":', 'decline', '', '"decline"', '[]', '{"action":"maybe"}', '{"action":"decline","extra":1}', 'allow_once']) {
          given(waitingOn(elicitation)).when(answer('call-1', raw)).thenThrows('invalid_body');
        }
      });

      it('leaves the question open after a refused answer', () => {
        expect(() => elicitationAnswered('{"action":"accept","content":{}}')).toThrow(DomainError);
        expect(openStateAfter(waitingOn(elicitation)).questions['call-1'].status).toBe('open');
        given(waitingOn(elicitation)).when(answer('call-1', '{"action":"decline"}')).then(elicitationAnswered('{"action":"decline"}'));
      });
    });
  });

  describe('ExpireQuestion', () => {
    const expire: SessionCommand = { type: 'ExpireQuestion', toolCallId: 'call-1', at: later };

    it('expires an open question and cancels its run for the interaction deadline', () => {
      given(waitingOn(permission))
        .when(expire)
        .then([
          { type: 'QuestionExpired', data: { runId: 'run-1', toolCallId: 'call-1' } },
          { type: 'RunCancelled', data: { runId: 'run-1', reason: 'interaction_deadline', at: later } },
        ]);
      const state = openStateAfter([...waitingOn(permission), ...decide(expire, stateAfter(waitingOn(permission)))]);
      expect(state.activeRun).toBeNull();
      expect(state.questions['call-1'].status).toBe('expired');
    });

    it('does nothing for a question that is not open', () => {
      const expired = decide(expire, stateAfter(waitingOn(permission)));
      given([...waitingOn(permission), ...expired]).when(expire).then([]);
      given([...waitingOn(permission), permissionAnswered('run-1', 'call-1', 'allow_once')]).when(expire).then([]);
      given([...waitingOn(permission), { type: 'RunCancelled', data: { runId: 'run-1', reason: 'client_disconnected', at } }]).when(expire).then([]);
      given(waitingOn(permission)).when({ ...expire, toolCallId: 'call-9' }).then([]);
    });

    it('answers not_found when the session does not exist', () => {
      given([]).when(expire).thenThrows('not_found');
    });
  });

  describe('FinishRun', () => {
    const finished = (runId: string, usageTotal: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null): SessionEvent => ({
      type: 'RunFinished',
      data: { runId, finishReason: 'stop', error: null, usage: usageTotal, at: later },
    });

    it('reports null usage when the model reported none', () => {
      given([opened, started('run-1'), output('run-1', 'hi')]).when(finishRun('run-1')).then([finished('run-1', null)]);
    });

    it('reports the sums of the usage recorded during the run', () => {
      given([opened, started('run-1'), usage('run-1', 10, 3), output('run-1', 'hi'), usage('run-1', 7, 4)])
        .when(finishRun('run-1'))
        .then([finished('run-1', { prompt_tokens: 17, completion_tokens: 7, total_tokens: 24 })]);
    });

    it('reports reported zero usage as zeros, not null', () => {
      given([opened, started('run-1'), usage('run-1', 0, 0)])
        .when(finishRun('run-1'))
        .then([finished('run-1', { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 })]);
    });

    it('counts only the usage of the run that finishes', () => {
      const history: SessionEvent[] = [opened, started('run-1'), usage('run-1', 10, 3), finished('run-1', null), started('run-2'), usage('run-1', 99, 99)];
      given(history).when(finishRun('run-2')).then([finished('run-2', null)]);
      given([...history, usage('run-2', 1, 2)])
        .when(finishRun('run-2'))
        .then([finished('run-2', { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 })]);
    });

    it('finishes with an error when given one', () => {
      const error = { reason: 'model_unavailable', message: 'the model did not answer' };
      given([opened, started('run-1')])
        .when({ type: 'FinishRun', runId: 'run-1', error, at: later })
        .then([{ type: 'RunFinished', data: { runId: 'run-1', finishReason: 'error', error, usage: null, at: later } }]);
    });

    it('closes the question the run waited on', () => {
      const state = openStateAfter([...waitingOn(permission), finished('run-1', null)]);
      expect(state.activeRun).toBeNull();
      expect(state.questions['call-1'].status).toBe('closed');
    });

    it('refuses a run that is not going', () => {
      given([opened]).when(finishRun('run-1')).thenThrows('interaction_not_pending');
      given([opened, started('run-2')]).when(finishRun('run-1')).thenThrows('interaction_not_pending');
      given([opened, started('run-1'), finished('run-1', null)]).when(finishRun('run-1')).thenThrows('interaction_not_pending');
    });
  });

  describe('FinishRunAtLimit', () => {
    const atLimit = (runId: string): SessionCommand => ({ type: 'FinishRunAtLimit', runId, at: later });
    const finishedAtLimit = (runId: string, usageTotal: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null): SessionEvent => ({
      type: 'RunFinished',
      data: { runId, finishReason: 'length', error: null, usage: usageTotal, at: later },
    });
    const toolCalled = (toolCallId: string): RunProgressEvent => ({
      type: 'ToolCalled',
      data: { runId: 'run-1', toolCallId, tool: 'shell', arguments: '{"command":"echo 1"}', consent: 'self-drive' },
    });

    it('finishes the going run with finish length and its usage so far', () => {
      given([opened, started('run-1'), toolCalled('call-1'), usage('run-1', 5, 2)])
        .when(atLimit('run-1'))
        .then([finishedAtLimit('run-1', { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 })]);
      given([opened, started('run-1')]).when(atLimit('run-1')).then([finishedAtLimit('run-1', null)]);
    });

    it('ends the run: the session takes the next prompt', () => {
      const history = [opened, started('run-1'), finishedAtLimit('run-1', null)];
      expect(openStateAfter(history).activeRun).toBeNull();
      given(history).when(startRun('run-2')).then([started('run-2')]);
    });

    it('closes the question the run waited on', () => {
      const state = openStateAfter([...waitingOn(permission), finishedAtLimit('run-1', null)]);
      expect(state.questions['call-1'].status).toBe('closed');
    });

    it('refuses a run that is not going', () => {
      given([opened]).when(atLimit('run-1')).thenThrows('interaction_not_pending');
      given([opened, started('run-2')]).when(atLimit('run-1')).thenThrows('interaction_not_pending');
      given([opened, started('run-1'), finishedAtLimit('run-1', null)]).when(atLimit('run-1')).thenThrows('interaction_not_pending');
    });

    it('answers not_found when the session does not exist', () => {
      given([]).when(atLimit('run-1')).thenThrows('not_found');
    });
  });

  describe('runUsage', () => {
    it('is the going run usage, null when none was reported or nothing is going', () => {
      expect(runUsage(stateAfter([opened, started('run-1'), usage('run-1', 2, 3), usage('run-1', 4, 5)]))).toEqual({
        prompt_tokens: 6,
        completion_tokens: 8,
        total_tokens: 14,
      });
      expect(runUsage(stateAfter([opened, started('run-1')]))).toBeNull();
      expect(runUsage(stateAfter([opened]))).toBeNull();
      expect(runUsage(initialState())).toBeNull();
    });
  });

  describe('CancelRun', () => {
    const cancel = (runId: string): SessionCommand => ({ type: 'CancelRun', runId, reason: 'intern_deleted', at: later });

    it('cancels the going run with its reason', () => {
      given([opened, started('run-1')])
        .when(cancel('run-1'))
        .then([{ type: 'RunCancelled', data: { runId: 'run-1', reason: 'intern_deleted', at: later } }]);
      given(waitingOn(permission))
        .when({ type: 'CancelRun', runId: 'run-1', reason: 'caller_cancelled', at: later })
        .then([{ type: 'RunCancelled', data: { runId: 'run-1', reason: 'caller_cancelled', at: later } }]);
    });

    it('does nothing for a run that is not going', () => {
      given([opened]).when(cancel('run-1')).then([]);
      given([opened, started('run-2')]).when(cancel('run-1')).then([]);
      given([opened, started('run-1'), { type: 'RunCancelled', data: { runId: 'run-1', reason: 'owner_lost', at } }]).when(cancel('run-1')).then([]);
    });

    it('answers not_found when the session does not exist', () => {
      given([]).when(cancel('run-1')).thenThrows('not_found');
    });
  });

  describe('run status', () => {
    /** Ends run-1 the way each ending is recorded: through the command its owner (or the deadline) gives. */
    const endedBy: Record<RunEndingReason, SessionCommand> = {
      stop: finishRun('run-1'),
      length: { type: 'FinishRunAtLimit', runId: 'run-1', at: later },
      error: { type: 'FinishRun', runId: 'run-1', error: { reason: 'model_unavailable', message: 'no answer' }, at: later },
      caller_cancelled: { type: 'CancelRun', runId: 'run-1', reason: 'caller_cancelled', at: later },
      client_disconnected: { type: 'CancelRun', runId: 'run-1', reason: 'client_disconnected', at: later },
      intern_suspended: { type: 'CancelRun', runId: 'run-1', reason: 'intern_suspended', at: later },
      intern_deleted: { type: 'CancelRun', runId: 'run-1', reason: 'intern_deleted', at: later },
      interaction_deadline: { type: 'ExpireQuestion', toolCallId: 'call-1', at: later },
      execution_deadline: { type: 'CancelRun', runId: 'run-1', reason: 'execution_deadline', at: later },
      owner_lost: { type: 'CancelRun', runId: 'run-1', reason: 'owner_lost', at: later },
    };
    /** CONTRACT section 12's status and finish for each ending, and what the run's readers are told. */
    const expected: Record<RunEndingReason, [string, string, string]> = {
      stop: ['completed', 'stop', 'finish'],
      length: ['completed', 'length', 'finish'],
      error: ['failed', 'error', 'run_error'],
      caller_cancelled: ['cancelled', 'stop', 'stop'],
      client_disconnected: ['cancelled', 'stop', 'nothing'],
      intern_suspended: ['cancelled', 'error', 'run_ended'],
      intern_deleted: ['cancelled', 'error', 'run_ended'],
      interaction_deadline: ['expired', 'error', 'run_ended'],
      execution_deadline: ['failed', 'error', 'run_ended'],
      owner_lost: ['failed', 'error', 'internal_error'],
    };

    it('is running from the start, awaiting_input while a question is open, running again once it is answered', () => {
      expect(openStateAfter([opened, started('run-1')]).activeRun?.status).toBe('running');
      expect(openStateAfter(waitingOn(permission)).activeRun?.status).toBe('awaiting_input');
      expect(openStateAfter([...waitingOn(permission), permissionAnswered('run-1', 'call-1', 'allow_once')]).activeRun?.status).toBe('running');
    });

    it('has a row in the endings table for every way a run ends', () => {
      expect(Object.keys(RUN_ENDINGS).sort()).toEqual(Object.keys(expected).sort());
    });

    it.each(Object.keys(expected) as RunEndingReason[])('shows a run ended by %s as the endings table says', (reason) => {
      const history = waitingOn(permission);
      const ended = openStateAfter([...history, ...decide(endedBy[reason], stateAfter(history))]);
      const [status, finishReason, tell] = expected[reason];
      expect(ended.activeRun).toBeNull();
      expect(ended.endedRun).toEqual({ runId: 'run-1', reason, status, finishReason, endedAt: later });
      expect(RUN_ENDINGS[reason].tell).toBe(tell);
    });

    it('gives a message to every ending told as run_ended or internal_error, and none to the others', () => {
      for (const rule of Object.values(RUN_ENDINGS)) {
        const told = rule.tell === 'run_ended' || rule.tell === 'internal_error';
        expect(rule.message === null).toBe(!told);
      }
    });

    it('keeps the ended run until the next one ends', () => {
      const history: SessionEvent[] = [opened, started('run-1'), { type: 'RunCancelled', data: { runId: 'run-1', reason: 'owner_lost', at } }, started('run-2')];
      const state = openStateAfter(history);
      expect(state.endedRun).toMatchObject({ runId: 'run-1', status: 'failed' });
      expect(state.activeRun).toMatchObject({ runId: 'run-2', status: 'running' });
    });
  });

  describe('evolve', () => {
    it('ignores everything before the session opened', () => {
      expect(stateAfter([started('run-1'), usage('run-1', 1, 1)])).toEqual({ kind: 'absent' });
    });

    it('ignores the end of a run that is not going', () => {
      const before = openStateAfter([opened, started('run-2')]);
      expect(evolve(before, { type: 'RunCancelled', data: { runId: 'run-1', reason: 'owner_lost', at } })).toEqual(before);
    });
  });
});
