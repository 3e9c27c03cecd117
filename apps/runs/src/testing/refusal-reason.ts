import { DomainError } from '@interns/contracts';

/** The reason a DomainError refusal gave (what the client's envelope carries); `no refusal` when there was none. */
export async function refusalReasonOf(action: Promise<unknown>): Promise<string> {
  try {
    await action;
  } catch (error) {
    if (error instanceof DomainError) return error.reason;
    throw error;
  }
  return 'no refusal';
}
