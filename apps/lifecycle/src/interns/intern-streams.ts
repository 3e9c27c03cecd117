import {
  CommandHandler,
  type EventMetadata,
  type HandleOptions,
  type InTransaction,
  type LoadedStream,
  PostgresEventStore,
} from '@interns/event-store';
import {
  INTERN_STREAM_TYPE,
  InternCommand,
  internDecider,
  InternEvent,
  InternState,
  internStreamId,
} from '@interns/lifecycle-domain';
import { logInternTransition } from './intern-transition.log';

/** One intern's stream as loaded: its version, the decider state and the stored events. */
export type LoadedIntern = LoadedStream<InternState>;

export interface ExecuteOptions {
  /** Same transaction as the append; runs only when the command produced events. */
  inTransaction?: InTransaction;
}

/**
 * Intern commands, by intern id, through the command handler. `onAppended` hears of every commit (it wakes
 * the process manager of this replica); `onChanged` of every intern a commit changed, before the command answers
 * (lifecycle publishes `internChanged` with it). Every intern write goes through here, so each committed status
 * change is logged here, once.
 */
export class InternStreams {
  private readonly handler: CommandHandler<InternState, InternCommand, InternEvent>;

  constructor(
    store: PostgresEventStore,
    onAppended: () => void = () => undefined,
    private readonly onChanged: (internId: string) => void = () => undefined,
  ) {
    this.handler = new CommandHandler(store, { decider: internDecider, streamType: INTERN_STREAM_TYPE, onAppended });
  }

  load(internId: string): Promise<LoadedIntern> {
    return this.handler.load(internStreamId(internId));
  }

  /**
   * Loads the intern, decides and appends at the loaded version (again on a race). `command` returns null to do
   * nothing with what it loaded. Decider refusals propagate as DomainError. Returns the events as stored.
   */
  async execute(
    internId: string,
    command: (loaded: LoadedIntern) => InternCommand | null,
    metadata: HandleOptions<InternState>['metadata'],
    options: ExecuteOptions = {},
  ): Promise<InternEvent[]> {
    // The metadata actually written (a function of the loaded stream, computed on the last attempt): its correlation id.
    let written: EventMetadata | undefined;
    const metadataOf = (loaded: LoadedIntern): EventMetadata => (written = typeof metadata === 'function' ? metadata(loaded) : metadata);
    const { events, previous, state } = await this.handler.handle(internStreamId(internId), command, { metadata: metadataOf, ...options });
    logInternTransition(internId, previous, state, written?.correlation_id);
    if (events.length > 0) this.onChanged(internId);
    return events;
  }

  /** A command on an intern id just minted: decided on the empty stream without reading it. */
  async executeOnNew(
    internId: string,
    command: InternCommand,
    metadata: EventMetadata,
    options: ExecuteOptions = {},
  ): Promise<InternEvent[]> {
    const empty = { version: 0, state: internDecider.initialState() };
    const { events, previous, state } = await this.handler.handleAt(internStreamId(internId), empty, command, { metadata, ...options });
    logInternTransition(internId, previous, state, metadata.correlation_id);
    if (events.length > 0) this.onChanged(internId);
    return events;
  }
}
