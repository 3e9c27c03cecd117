/**
 * A real browser for the console's end-to-end tests: Debian's chromium (apt-get install -y chromium) driven headless
 * by playwright-core, with a fresh profile per run and no network of its own beyond the platform under test. Collects
 * what the page reports as errors (console errors, uncaught exceptions, CSP violations), runs axe-core on a page, and
 * saves screenshots under SCREENSHOT_DIR (git-ignored).
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SCREENSHOT_DIR = resolve('.data/console-screenshots');

/** Flags that keep a headless chromium off the network and out of first-run work (the suite runs offline). */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-quic',
  '--disable-sync',
];

/** What a page reported as going wrong, in order. */
export interface PageProblems {
  messages: string[];
}

export interface Browser {
  context: BrowserContext;
  page: Page;
  problems: PageProblems;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  const profile = await mkdtemp(join(tmpdir(), 'console-e2e-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1280, height: 900 },
    acceptDownloads: true,
    timeout: 60_000,
  });
  context.setDefaultTimeout(20_000);
  const problems: PageProblems = { messages: [] };
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (message) => {
    if (message.type() === 'error') problems.messages.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.messages.push(`uncaught: ${error.message}`));
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  return {
    context,
    page,
    problems,
    async close() {
      await context.close().catch(() => undefined);
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/**
 * An expression evaluated in the page. Written as text: this file is Node code, type-checked without the DOM's types,
 * and what runs in the page is the page's business.
 */
export function inPage<T = unknown>(page: Page, expression: string): Promise<T> {
  return page.evaluate(expression) as Promise<T>;
}

/** A screenshot of the whole page as `<name>.png` under SCREENSHOT_DIR. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}

/** axe-core's serious and critical violations on the page as it is now (WCAG 2.1 A and AA rules and best practices). */
export async function seriousAccessibilityViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']).analyze();
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id} (${violation.impact}): ${violation.help} at ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
}
