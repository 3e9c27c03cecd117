// Longer than 300 lines on purpose: every transition of the run workflow, given/when/then, beside each other.
import type { ElicitationQuestion, ErrorReason, ParsedAnswer, SessionMessage, Usage } from '@interns/contracts';
import { workflowSpec } from '../testing/workflow-spec';
import type { Ending } from './run-ending';
import { decide, evolve, initialRunState, isStopped } from './run-workflow';
import type { RunEffect, RunInput } from './run-workflow';

const chat = workflowSpec({ initialState: () => initialRunState({ runId: 'run-1', origin: 'chat' }), evolve, decide });
const invoke = workflowSpec({ initialState: () => initialRunState({ runId: 'run-1', origin: 'invoke' }), evolve, decide });
const given = (done: RunEffect[]) => chat.given(done);

const at = '2026-11-21T10:00:00.000Z';
const expiresAt = '2026-11-21T10:10:00.000Z';
const stream = { streamId: 'stream-1', created: 1_700_000_000 };
const answerStream = { streamId: 'stream-2', created: 1_700_000_100 };
const question: ElicitationQuestion = { kind: 'elicitation', message: 'who are you?', fields: [{ name: 'name', type: 'string', required: true }] };
const allow: ParsedAnswer = { kind: 'permission', option: 'allow_once' };

const message = (sent: SessionMessage): RunInput => ({ type: 'message', message: sent, at });
const ok: RunEffect = { type: 'reply', reply: { ok: true } };
const refused = (reason: ErrorReason, text: string): RunEffect => ({ type: 'reply', reply: { ok: false, kind: 'service_error', reason, message: text } });
const notActive = refused('run_not_active', 'the run has already ended');
const stopped = (ending: Ending): RunEffect[] => [{ type: 'stop_loop', ending }, { type: 'give_up_question' }];

/** What a chat run has done once started: its first response is read live on `stream`. */
const going: RunEffect[] = [{ type: 'count_active_run' }, { type: 'attach_response', stream }, { type: 'arm_execution_deadline' }];
/** A going chat run whose response ended with question `call-1`, now waited on. */
const waiting: RunEffect[] = [
  ...going,
  { type: 'end_response_with_question', toolCallId: 'call-1', question },
  { type: 'await_answer', toolCallId: 'call-1' },
];
const cancelled: Ending = { reason: 'caller_cancelled', tell: 'stop' };
const stoppedByCaller: RunEffect[] = [...going, ...stopped(cancelled)];

describe('run workflow', () => {
  describe('started', () => {
    it('counts the run, attaches its first response and arms the execution deadline', () => {
      given([]).when({ type: 'started', stream }).then(going);
    });

    it('keeps the response of a run nobody reads live (invoke) in the log only', () => {
      invoke
        .given([])
        .when({ type: 'started', stream: null })
        .then([{ type: 'count_active_run' }, { type: 'attach_response', stream: null }, { type: 'arm_execution_deadline' }]);
    });
  });

  describe('steer', () => {
    const steer = message({ type: 'steer', text: 'also this', correlationId: 'corr-1' });

    it('records the prompt, then queues it for the loop, then replies', () => {
      given(going)
        .when(steer)
        .then([
          { type: 'record', command: { type: 'JoinPrompt', text: 'also this', at }, correlationId: 'corr-1' },
          { type: 'queue_steering', text: 'also this' },
          ok,
        ]);
    });

    it('is refused with run_not_active once the run was stopped', () => {
      given(stoppedByCaller).when(steer).then([notActive]);
    });
  });

  describe('answer', () => {
    const answer = message({ type: 'answer', toolCallId: 'call-1', content: 'allow_once', stream: answerStream, approvalMode: 'manual', correlationId: 'corr-2' });
    const recordAnswer = (waitingOn: string | null): RunEffect => ({
      type: 'record_answer',
      toolCallId: 'call-1',
      raw: 'allow_once',
      stream: answerStream,
      correlationId: 'corr-2',
      waitingOn,
    });

    it('records the answer with the question the loop waits on now', () => {
      given(waiting).when(answer).then([recordAnswer('call-1')]);
    });

    it('records an answer no question waits on too: the session judges every answer', () => {
      given(going).when(answer).then([recordAnswer(null)]);
    });

    it('attaches the answer’s response before it hands the loop the answer, then replies', () => {
      given(waiting)
        .when({ type: 'answer_recorded', toolCallId: 'call-1', stream: answerStream, answer: allow, waitingOn: 'call-1' })
        .then([{ type: 'attach_response', stream: answerStream }, { type: 'settle_question', toolCallId: 'call-1', answer: allow }, ok]);
    });

    it('is refused as no longer pending when the loop waited on another question when it came', () => {
      given(waiting)
        .when({ type: 'answer_recorded', toolCallId: 'call-1', stream: answerStream, answer: allow, waitingOn: 'call-9' })
        .then([refused('interaction_not_pending', 'the question is no longer pending')]);
    });

    it('is refused as no longer pending when the session recorded no answer', () => {
      given(waiting)
        .when({ type: 'answer_recorded', toolCallId: 'call-1', stream: answerStream, answer: null, waitingOn: 'call-1' })
        .then([refused('interaction_not_pending', 'the question is no longer pending')]);
    });

    it('replies with the session’s refusal as it is', () => {
      given(waiting)
        .when({ type: 'answer_refused', refusal: { kind: 'service_error', reason: 'invalid_body', message: 'not an option' } })
        .then([refused('invalid_body', 'not an option')]);
    });
  });

  describe('disconnect', () => {
    const left = (streamId: string, background: boolean) => message({ type: 'disconnect', streamId, background });

    it('cancels the run, telling nobody, when the live client leaves in the foreground', () => {
      given(going)
        .when(left('stream-1', false))
        .then([...stopped({ reason: 'client_disconnected', tell: 'nothing' }), ok]);
    });

    it('detaches the response when the live client leaves in the background; the run goes on', () => {
      given(going).when(left('stream-1', true)).then([{ type: 'detach_response' }, ok]);
    });

    it('changes nothing for a stream the run does not write to', () => {
      given(going).when(left('stream-9', false)).then([ok]);
    });

    it('changes nothing once the client was detached', () => {
      given([...going, { type: 'detach_response' }]).when(left('stream-1', false)).then([ok]);
    });

    it('changes nothing while a question waits (no response is written)', () => {
      given(waiting).when(left('stream-1', false)).then([ok]);
    });

    it('does not stop a run already stopped again', () => {
      given(stoppedByCaller).when(left('stream-1', false)).then([ok]);
    });
  });

  describe('cancel', () => {
    const cancel = message({ type: 'cancel', correlationId: 'corr-3' });

    it('stops the loop and gives up a waiting question, then replies', () => {
      given(waiting).when(cancel).then([...stopped(cancelled), ok]);
    });

    it('is refused with run_not_active once the run was stopped', () => {
      given([...going, ...stopped({ reason: 'execution_deadline', tell: 'run_ended' })])
        .when(cancel)
        .then([notActive]);
    });
  });

  describe('probe', () => {
    it('replies that the owner is alive, stopped or not', () => {
      given(going).when(message({ type: 'probe' })).then([ok]);
      given(stoppedByCaller).when(message({ type: 'probe' })).then([ok]);
    });
  });

  describe('end', () => {
    const end = message({ type: 'end', reason: 'intern_suspended', correlationId: 'corr-4' });

    it('stops the run for the intern, waits until its end is recorded, then replies', () => {
      given(going)
        .when(end)
        .then([...stopped({ reason: 'intern_suspended', tell: 'run_ended' }), { type: 'await_finished' }, ok]);
    });

    it('waits for a run already stopped to finish, keeping its first reason', () => {
      given(stoppedByCaller).when(end).then([{ type: 'await_finished' }, ok]);
    });
  });

  describe('deadlines', () => {
    it('stops the run at its execution deadline, telling the client it ended', () => {
      given(going).when({ type: 'execution_deadline' }).then(stopped({ reason: 'execution_deadline', tell: 'run_ended' }));
    });

    it('does nothing at the execution deadline of a run already stopped', () => {
      given(stoppedByCaller).when({ type: 'execution_deadline' }).thenNothingHappened();
    });

    it('stops the run when the question it waits on is not answered in time', () => {
      given(waiting)
        .when({ type: 'interaction_deadline', toolCallId: 'call-1' })
        .then(stopped({ reason: 'interaction_deadline', tell: 'run_ended', toolCallId: 'call-1' }));
    });

    it('does nothing at the deadline of a question answered in time', () => {
      given([...waiting, { type: 'attach_response', stream: answerStream }, { type: 'settle_question', toolCallId: 'call-1', answer: allow }])
        .when({ type: 'interaction_deadline', toolCallId: 'call-1' })
        .thenNothingHappened();
    });

    it('does nothing at the deadline of a question the run no longer waits on', () => {
      given(waiting).when({ type: 'interaction_deadline', toolCallId: 'call-9' }).thenNothingHappened();
      given([...waiting, ...stopped(cancelled)]).when({ type: 'interaction_deadline', toolCallId: 'call-1' }).thenNothingHappened();
    });
  });

  describe('the loop asks', () => {
    it('records the question with the output streamed so far', () => {
      given(going)
        .when({ type: 'loop_asked', toolCallId: 'call-1', question, expiresAt })
        .then([{ type: 'record_question', command: { type: 'AskQuestion', runId: 'run-1', toolCallId: 'call-1', question, expiresAt }, toolCallId: 'call-1', question }]);
    });

    it('ends the live response with the question and waits for the answer (chat)', () => {
      given(going)
        .when({ type: 'question_recorded', toolCallId: 'call-1', question })
        .then([
          { type: 'end_response_with_question', toolCallId: 'call-1', question },
          { type: 'await_answer', toolCallId: 'call-1' },
        ]);
    });

    it('answers with the intern’s fallback at once when nobody can be asked (invoke)', () => {
      invoke
        .given([{ type: 'count_active_run' }, { type: 'attach_response', stream: null }, { type: 'arm_execution_deadline' }])
        .when({ type: 'question_recorded', toolCallId: 'call-1', question })
        .then([{ type: 'answer_with_fallback', toolCallId: 'call-1' }]);
    });

    it('answers with the fallback when no response is written to end with the question', () => {
      given(waiting)
        .when({ type: 'question_recorded', toolCallId: 'call-2', question })
        .then([{ type: 'answer_with_fallback', toolCallId: 'call-2' }]);
    });

    it('hands the loop no answer when the run was stopped while the question was recorded', () => {
      given(stoppedByCaller).when({ type: 'question_recorded', toolCallId: 'call-1', question }).then([{ type: 'withhold_answer' }]);
    });

    it('stops the run when the caller’s answer cancels it', () => {
      given(going).when({ type: 'loop_cancelled_by_answer' }).then(stopped(cancelled));
    });
  });

  describe('the loop ends', () => {
    const concluded = (command: RunEffect & { type: 'record_ending' }, label: string, before: RunEffect[] = []): RunEffect[] => [
      ...before,
      { type: 'disarm_execution_deadline' },
      { type: 'measure_run', ending: label },
      command,
      { type: 'flush_log' },
    ];

    it('records a finished run, then flushes its log', () => {
      given(going)
        .when({ type: 'loop_finished', finish: 'stop', at })
        .then(
          concluded(
            { type: 'record_ending', command: { type: 'FinishRun', runId: 'run-1', error: null, at }, ending: null, outcome: { finish: 'stop' } },
            'stop',
          ),
        );
    });

    it('records a run that reached its cap as finished at the limit', () => {
      given(going)
        .when({ type: 'loop_finished', finish: 'length', at })
        .then(
          concluded(
            { type: 'record_ending', command: { type: 'FinishRunAtLimit', runId: 'run-1', at }, ending: null, outcome: { finish: 'length' } },
            'length',
          ),
        );
    });

    it('records a stopped run as cancelled for its reason, however the loop ended', () => {
      const cancelledEnding: RunEffect & { type: 'record_ending' } = {
        type: 'record_ending',
        command: { type: 'CancelRun', runId: 'run-1', reason: 'caller_cancelled', at },
        ending: cancelled,
        outcome: { finish: 'stop' },
      };
      given(stoppedByCaller).when({ type: 'loop_finished', finish: 'stop', at }).then(concluded(cancelledEnding, 'cancelled:caller_cancelled'));
      given(stoppedByCaller)
        .when({ type: 'loop_failed', failure: { kind: 'unexpected', detail: 'run stopped' }, at })
        .then(concluded(cancelledEnding, 'cancelled:caller_cancelled'));
    });

    it('records an unanswered question’s run as the question expired', () => {
      const ending: Ending = { reason: 'interaction_deadline', tell: 'run_ended', toolCallId: 'call-1' };
      given([...waiting, ...stopped(ending)])
        .when({ type: 'loop_failed', failure: { kind: 'unexpected', detail: 'run stopped' }, at })
        .then(
          concluded(
            { type: 'record_ending', command: { type: 'ExpireQuestion', toolCallId: 'call-1', at }, ending, outcome: { finish: 'stop' } },
            'cancelled:interaction_deadline',
          ),
        );
    });

    it('records the model provider’s error as the run’s, without logging it', () => {
      given(going)
        .when({ type: 'loop_failed', failure: { kind: 'model', reason: 'configuration_error', message: 'the model is down' }, at })
        .then(
          concluded(
            {
              type: 'record_ending',
              command: { type: 'FinishRun', runId: 'run-1', error: { reason: 'configuration_error', message: 'the model is down' }, at },
              ending: null,
              outcome: { finish: 'error', reason: 'configuration_error', message: 'the model is down' },
            },
            'error',
          ),
        );
    });

    it('logs any other failure and records it as an internal error', () => {
      given(going)
        .when({ type: 'loop_failed', failure: { kind: 'unexpected', detail: 'Error: boom' }, at })
        .then(
          concluded(
            {
              type: 'record_ending',
              command: { type: 'FinishRun', runId: 'run-1', error: { reason: 'internal_error', message: 'the run failed' }, at },
              ending: null,
              outcome: { finish: 'error', reason: 'internal_error', message: 'the run failed' },
            },
            'error',
            [{ type: 'log_error', message: 'run run-1 failed: Error: boom' }],
          ),
        );
    });
  });

  describe('the end is recorded', () => {
    const usage: Usage = { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 };
    const recordedAs = (ending: Ending | null): RunEffect => ({
      type: 'record_ending',
      command: { type: 'FinishRun', runId: 'run-1', error: null, at },
      ending,
      outcome: { finish: 'stop' },
    });

    it('ends the response being written with the run', () => {
      given([...going, recordedAs(null)])
        .when({ type: 'ending_recorded', usage })
        .then([{ type: 'end_response_with_run', ending: null, outcome: { finish: 'stop' }, usage }]);
    });

    it('gives the ending a response of its own when the run was stopped while a question waited', () => {
      given([...waiting, ...stopped(cancelled), recordedAs(cancelled)])
        .when({ type: 'ending_recorded', usage })
        .then([{ type: 'attach_response', stream: null }, { type: 'end_response_with_run', ending: cancelled, outcome: { finish: 'stop' }, usage }]);
    });

    it('does nothing before the loop is over', () => {
      given(going).when({ type: 'ending_recorded', usage }).thenNothingHappened();
    });

    it('logs an end that could not be recorded and abandons the response: the gateway reads a severed stream', () => {
      given([...going, recordedAs(null)])
        .when({ type: 'ending_not_recorded', detail: 'append failed' })
        .then([{ type: 'log_error', message: 'run run-1 could not record its end: append failed' }, { type: 'abandon_response' }]);
    });
  });

  describe('shutdown', () => {
    it('stops the run, an attached client told a retryable error, and waits until its end is recorded', () => {
      given(going)
        .when({ type: 'shutdown' })
        .then([...stopped({ reason: 'owner_lost', tell: 'internal_error' }), { type: 'await_finished' }]);
    });

    it('only waits for a run already stopped', () => {
      given(stoppedByCaller).when({ type: 'shutdown' }).then([{ type: 'await_finished' }]);
    });
  });

  describe('state', () => {
    it('is stopped from the first stop on, for the first reason', () => {
      const state = [...going, ...stopped(cancelled)].reduce(evolve, initialRunState({ runId: 'run-1', origin: 'chat' }));
      expect(isStopped(state)).toBe(true);
      expect(state.ending).toEqual(cancelled);
      expect(isStopped(going.reduce(evolve, initialRunState({ runId: 'run-1', origin: 'chat' })))).toBe(false);
    });
  });
});
