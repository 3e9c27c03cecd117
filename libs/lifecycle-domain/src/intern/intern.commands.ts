import type { InternChanges, InternCreated } from './intern.events';

export interface CreateIntern {
  type: 'CreateIntern';
  data: InternCreated['data'];
}

export interface UpdateIntern {
  type: 'UpdateIntern';
  data: { changes: InternChanges; at: string };
}

export type InternCommand = CreateIntern | UpdateIntern;
