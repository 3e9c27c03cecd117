import type { ParsedAnswer } from '@interns/contracts';
import { PendingQuestion } from './pending-question';

const allow: ParsedAnswer = { kind: 'permission', option: 'allow_once' };
const never = () => {
  throw new Error('the question expired');
};

describe('PendingQuestion', () => {
  it('waits for the answer to the question it asked', async () => {
    const question = new PendingQuestion();
    const answer = question.wait('call-1', 60_000, never);
    expect(question.toolCallId).toBe('call-1');
    question.settle('call-9', { kind: 'permission', option: 'reject_once' });
    question.settle('call-1', allow);
    await expect(answer).resolves.toEqual(allow);
    expect(question.toolCallId).toBeNull();
  });

  it('gives null to what waits when the run stops, and nothing more after', async () => {
    const question = new PendingQuestion();
    const answer = question.wait('call-1', 60_000, never);
    question.giveUp();
    question.settle('call-1', allow);
    await expect(answer).resolves.toBeNull();
    question.giveUp();
  });

  it('expires a question left unanswered past its deadline', async () => {
    const question = new PendingQuestion();
    const expired = new Promise<void>((resolve) => {
      void question.wait('call-1', 10, () => {
        question.giveUp();
        resolve();
      });
    });
    await expired;
    expect(question.toolCallId).toBeNull();
  });

  it('does not expire a question that was answered in time', async () => {
    const question = new PendingQuestion();
    const answer = question.wait('call-1', 20, never);
    question.settle('call-1', allow);
    await expect(answer).resolves.toEqual(allow);
    await new Promise((resolve) => setTimeout(resolve, 40));
  });
});
