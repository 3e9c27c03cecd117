/** Steps the console's browser suite takes on its pages, in the words a user would use (labels, roles, names). */
import type { Locator, Page } from 'playwright-core';
import { inPage, screenshot, seriousAccessibilityViolations } from './browser.fixture';

export async function signIn(page: Page, consoleUrl: string, credential: string, use: string): Promise<void> {
  await page.goto(consoleUrl);
  await page.getByLabel('API key or OAuth access token').fill(credential);
  await page.getByLabel(use).check();
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** The page as it is now passes axe-core (no serious or critical violation), and is kept as a screenshot. */
export async function checkPage(page: Page, name: string): Promise<void> {
  expect({ page: name, violations: await seriousAccessibilityViolations(page) }).toEqual({ page: name, violations: [] });
  await screenshot(page, name);
}

/** The intern's answer to the newest prompt in the chat. */
export function lastAnswer(page: Page): Locator {
  return page.locator('.exchange').last().locator('.bubble.assistant');
}

/** The rendered Markdown of that answer (without the run link and status beside it). */
export function answerText(page: Page): Locator {
  return lastAnswer(page).locator('.markdown');
}

export async function sendPrompt(page: Page, prompt: string): Promise<void> {
  await page.getByLabel('Message').fill(prompt);
  await page.getByRole('button', { name: 'Send' }).click();
}

export async function openSection(page: Page, section: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Intern sections' }).getByRole('link', { name: section }).click();
  await page.getByRole('region', { name: section, exact: true }).waitFor();
}

/** Whether a value appears anywhere the page keeps text: its markup, its fields, its storages, its cookies. */
export function pageHolds(page: Page, value: string): Promise<boolean> {
  return inPage<boolean>(
    page,
    `(() => {
      const fields = [...document.querySelectorAll('input, textarea')].map((field) => field.value);
      const stored = [sessionStorage, localStorage].flatMap((storage) =>
        Array.from({ length: storage.length }, (_, index) => storage.getItem(storage.key(index) ?? '') ?? ''),
      );
      return [document.documentElement.outerHTML, ...fields, ...stored, document.cookie].some((text) => text.includes(${JSON.stringify(value)}));
    })()`,
  );
}
