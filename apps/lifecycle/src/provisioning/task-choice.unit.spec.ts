import { chooseTasks, type TaskCandidate, type TaskSlots } from './task-choice';

const intern = (id: string, workspaceId = 'w1'): TaskCandidate => ({ id, workspaceId });
const idle: TaskSlots = {
  inFlight: new Set(),
  inFlightPerWorkspace: new Map(),
  maxParallel: 16,
  perWorkspace: 16,
  isReady: () => true,
};
const ids = (chosen: TaskCandidate[]) => chosen.map((item) => item.id);

describe('chooseTasks', () => {
  it('gives every intern of the to-do list a task, in its order, when slots are free', () => {
    expect(ids(chooseTasks([intern('a'), intern('b', 'w2'), intern('c')], idle))).toEqual(['a', 'b', 'c']);
  });

  it('skips an intern whose task is still in flight', () => {
    const slots = { ...idle, inFlight: new Set(['a']), inFlightPerWorkspace: new Map([['w1', 1]]) };
    expect(ids(chooseTasks([intern('a'), intern('b')], slots))).toEqual(['b']);
  });

  it('gives an intern listed twice one task', () => {
    expect(ids(chooseTasks([intern('a'), intern('a')], idle))).toEqual(['a']);
  });

  it('skips an intern that is backing off', () => {
    expect(ids(chooseTasks([intern('a'), intern('b')], { ...idle, isReady: (id) => id !== 'a' }))).toEqual(['b']);
  });

  it('stops at the limit of tasks in flight across interns, counting those already running', () => {
    const slots = { ...idle, maxParallel: 3, inFlight: new Set(['x']), inFlightPerWorkspace: new Map([['w9', 1]]) };
    expect(ids(chooseTasks([intern('a'), intern('b', 'w2'), intern('c', 'w3'), intern('d', 'w4')], slots))).toEqual(['a', 'b']);
  });

  it('holds a workspace to its own limit and lets the other workspaces through', () => {
    const slots = { ...idle, perWorkspace: 2, inFlight: new Set(['x']), inFlightPerWorkspace: new Map([['w1', 1]]) };
    const pending = [intern('a'), intern('b'), intern('c', 'w2'), intern('d', 'w2'), intern('e', 'w2')];
    expect(ids(chooseTasks(pending, slots))).toEqual(['a', 'c', 'd']);
  });

  it('leaves the counts it was given as they are (the caller counts a task when it starts it)', () => {
    const inFlight = new Set<string>();
    const inFlightPerWorkspace = new Map<string, number>();
    chooseTasks([intern('a')], { ...idle, inFlight, inFlightPerWorkspace });
    expect(inFlight.size).toBe(0);
    expect(inFlightPerWorkspace.size).toBe(0);
  });
});
