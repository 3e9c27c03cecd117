import { randomUUID } from 'node:crypto';
import { callerId } from '@interns/contracts';
import type { ChatRequest, InternView, InvokeRequest, Principal, RequestContext } from '@interns/contracts';
import { NO_OWNER } from '@interns/messaging';
import type { ActiveRun, SessionOpenState, SessionOrigin, SessionState } from '@interns/runs-domain';
import type { ModelProviders } from '../agent/model-providers';
import type { RunHost, RunStart } from '../runs/run-host';
import type { SessionStreams } from '../sessions/session-streams';
import { TurnsService } from './turns.service';
import type { InternLookup } from './intern-lookup';
import { refusalReasonOf } from '../testing/refusal-reason';

/**
 * Chat's and invoke's steer-or-start, against stand-ins for the run host, the session streams, the intern lookup
 * and the model catalogue (the run itself and its storage are covered by the runs and gateway specs).
 */
const INTERN_ID = randomUUID();
const principal: Principal = {
  kind: 'user',
  organizationId: randomUUID(),
  workspaceId: randomUUID(),
  memberId: randomUUID(),
  keyId: randomUUID(),
  internId: null,
  scopes: ['interns'],
  chatappInstallRequired: false,
};
const context: RequestContext = { correlationId: 'corr-1', principal };
const intern = { id: INTERN_ID, model: 'acme/m1', instructions: 'be brief', status: 'running' } as InternView;

type SendReply = { ok: true } | { ok: false; reason: string; message: string } | typeof NO_OWNER;

class Fakes {
  readonly sessions = new Map<string, SessionState>();
  readonly started: RunStart[] = [];
  readonly sent: { sessionId: string; message: { type: string } }[] = [];
  readonly orphans: string[] = [];
  sendReply: SendReply = { ok: true };

  service(): TurnsService {
    const host = {
      start: async (start: RunStart) => {
        this.started.push(start);
        return { runId: `run-${this.started.length}` };
      },
      send: async (sessionId: string, message: { type: string }) => {
        this.sent.push({ sessionId, message });
        return this.sendReply;
      },
      cancelOrphan: async (row: { id: string }) => {
        this.orphans.push(row.id);
      },
    } as unknown as RunHost;
    const streams = {
      load: async (sessionId: string) => ({ version: 1, events: [], state: this.sessions.get(sessionId) ?? { kind: 'absent' } }),
    } as unknown as SessionStreams;
    const interns = { running: async () => intern } as unknown as InternLookup;
    const models = { resolve: (requested: string | null) => ({ model: requested ?? 'default', provider: {} }) } as unknown as ModelProviders;
    return new TurnsService(host, streams, interns, models);
  }

  /** A session of this caller on this intern, with a going run when `runId` is given. */
  session(origin: SessionOrigin, runId: string | null = null, owner = callerId(principal)): SessionOpenState {
    const sessionId = randomUUID();
    const activeRun = runId === null ? null : ({ runId, model: 'acme/m1', origin } as ActiveRun);
    const session: SessionOpenState = {
      kind: 'open',
      sessionId,
      internId: INTERN_ID,
      callerId: owner,
      origin,
      activeRun,
      endedRun: null,
      questions: {},
      standingShellPermission: null,
      runCount: 1,
    };
    this.sessions.set(sessionId, session);
    return session;
  }
}

function invoke(sessionId: string | null): InvokeRequest {
  return { context, internId: INTERN_ID, input: 'do it', sessionId };
}

function chat(sessionId: string | null): ChatRequest {
  return {
    context,
    internId: INTERN_ID,
    streamId: 'stream-1',
    created: 1_700_000_000,
    turn: { kind: 'prompt', text: 'hello', sessionId, approvalMode: 'manual', background: false },
  };
}


describe('TurnsService: steer or start', () => {
  let fakes: Fakes;
  let turns: TurnsService;

  beforeEach(() => {
    fakes = new Fakes();
    turns = fakes.service();
  });

  it('invoke without a session starts a self-driving run in a new session', async () => {
    const reply = await turns.invoke(invoke(null));
    expect(reply).toEqual({ session_id: expect.any(String), status: 'started', run_id: 'run-1' });
    expect(fakes.started).toEqual([
      expect.objectContaining({
        sessionId: reply.session_id,
        openSession: true,
        internId: INTERN_ID,
        callerId: callerId(principal),
        origin: 'invoke',
        model: 'acme/m1',
        approvalMode: 'self-drive',
        instructions: 'be brief',
        prompt: 'do it',
        stream: null,
        correlationId: 'corr-1',
      }),
    ]);
  });

  it('invoke steers the going run of its session, and starts one in it when none is going', async () => {
    const going = fakes.session('invoke', 'run-going');
    expect(await turns.invoke(invoke(going.sessionId))).toEqual({ session_id: going.sessionId, status: 'steered', run_id: 'run-going' });
    expect(fakes.sent).toEqual([{ sessionId: going.sessionId, message: { type: 'steer', text: 'do it', correlationId: 'corr-1' } }]);
    expect(fakes.started).toEqual([]);

    const idle = fakes.session('invoke');
    expect(await turns.invoke(invoke(idle.sessionId))).toEqual({ session_id: idle.sessionId, status: 'started', run_id: 'run-1' });
    expect(fakes.started[0]).toMatchObject({ sessionId: idle.sessionId, openSession: false });
  });

  it('invoke answers 404 for a session that is absent, a chat session, or another caller\'s', async () => {
    expect(await refusalReasonOf(turns.invoke(invoke(randomUUID())))).toBe('not_found');
    expect(await refusalReasonOf(turns.invoke(invoke(fakes.session('chat').sessionId)))).toBe('not_found');
    expect(await refusalReasonOf(turns.invoke(invoke(fakes.session('invoke', null, 'member:other').sessionId)))).toBe('not_found');
    expect(fakes.started).toEqual([]);
  });

  it('a run whose owner is gone is ended as an orphan and the prompt starts a new run', async () => {
    fakes.sendReply = NO_OWNER;
    const going = fakes.session('invoke', 'run-orphan');
    expect(await turns.invoke(invoke(going.sessionId))).toEqual({ session_id: going.sessionId, status: 'started', run_id: 'run-1' });
    expect(fakes.orphans).toEqual(['run-orphan']);
    expect(fakes.started[0]).toMatchObject({ sessionId: going.sessionId, openSession: false });
  });

  it('chat starts a streamed run with the turn\'s approval mode, in the session id the caller names when it is new', async () => {
    const named = randomUUID();
    expect(await turns.chat(chat(named))).toEqual({ status: 'streaming', sessionId: named, model: 'acme/m1', runId: 'run-1' });
    expect(fakes.started[0]).toMatchObject({
      sessionId: named,
      openSession: true,
      origin: 'chat',
      approvalMode: 'manual',
      prompt: 'hello',
      stream: { streamId: 'stream-1', created: 1_700_000_000 },
    });

    const reply = await turns.chat(chat(null));
    expect(reply).toMatchObject({ status: 'streaming', runId: 'run-2' });
    expect(reply.sessionId).not.toBe(named);
    expect(fakes.started[1]).toMatchObject({ sessionId: reply.sessionId, openSession: true });
  });

  it('chat steers the going run of its session; a refused steer starts a run in the session instead', async () => {
    const going = fakes.session('chat', 'run-going');
    expect(await turns.chat(chat(going.sessionId))).toEqual({ status: 'steered', sessionId: going.sessionId, runId: 'run-going' });
    expect(fakes.started).toEqual([]);

    fakes.sendReply = { ok: false, reason: 'run_ended', message: 'ended' };
    expect(await turns.chat(chat(going.sessionId))).toEqual({ status: 'streaming', sessionId: going.sessionId, model: 'acme/m1', runId: 'run-1' });
    expect(fakes.started[0]).toMatchObject({ sessionId: going.sessionId, openSession: false });
  });

  it('chat answers 404 for another caller\'s session', async () => {
    const theirs = fakes.session('chat', 'run-theirs', 'member:other');
    expect(await refusalReasonOf(turns.chat(chat(theirs.sessionId)))).toBe('not_found');
    expect(fakes.sent).toEqual([]);
  });
});
