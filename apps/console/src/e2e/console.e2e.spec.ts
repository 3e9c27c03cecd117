// Longer than 300 lines on purpose: one browser on one platform walks the console page by page, each step building on the last.
/**
 * End to end: the web console (interface section 23) in a real browser (Debian's chromium, headless, through
 * playwright-core) against the whole running platform. Sign-in, an intern created in the page reaching `running` with
 * its progress shown and no reload (live events), streamed chat, untrusted output rendered inert, a manual-approval
 * permission card, the question inbox, a run's replay and cancel, files up and down, a secret whose value is never shown
 * again, the egress policy, webhooks, deletion by keyboard, phone width, analytics charts for a management key; on every
 * page axe-core finds no serious or critical violation, and the page reports no error. Screenshots: .data/console-screenshots/.
 */
import { readFile } from 'node:fs/promises';
import { jest } from '@jest/globals';
import { Platform, PLATFORM_SERVICES } from '@interns/testing';
import type { Page } from 'playwright-core';
import { inPage, launchBrowser, type Browser } from '../testing/browser.fixture';
import { CONSOLE_IDENTITIES, CONSOLE_KEYS } from '../testing/console-identities.fixture';
import { answerText, checkPage, lastAnswer, openSection, pageHolds, sendPrompt, signIn } from '../testing/console-pages.fixture';

const SECRET_VALUE = 'ghp_console_e2e_value_never_shown_9f3a';
const HOSTILE_FILE_NAME = '<img src=x onerror="window.__pwned=\'file\'">.txt';
/** No part of the page is wider than the window (nothing to scroll sideways but the tables' own regions). */
const FITS_WIDTH = 'document.documentElement.scrollWidth <= window.innerWidth';
let platform: Platform;
let browser: Browser;
let page: Page;
let consoleUrl: string;
const internName = `ada-${Math.random().toString(36).slice(2, 8)}`;

/** What the page's script could have run from untrusted text: set by any payload that executed. */
const pwned = () => inPage<string | null>(page, 'window.__pwned ?? null');

// A step is a few page actions and an axe run; on a loaded machine that is more than jest's default 30 s.
jest.setTimeout(90_000);

beforeAll(async () => {
  platform = await Platform.start({
    // Started one after another below: on a loaded machine six services booting at once can miss their start deadline.
    services: [],
    env: {
      // Each provisioning step takes a moment, so the progress bar is there to be seen.
      PROVISION_STEP_DELAY_MS: '600',
      CHAT_TURNS_PER_MINUTE: '1000',
      WEBHOOK_ALLOW_INSECURE: 'true',
      KEEPALIVE_INTERVAL_MS: '5000',
    },
  });
  for (const service of PLATFORM_SERVICES) await platform.startService(service);
  await platform.applyIdentities(CONSOLE_IDENTITIES);
  consoleUrl = `${platform.gatewayUrl}/console/`;
  browser = await launchBrowser();
  page = browser.page;
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await platform?.stop();
});

afterEach(() => {
  // Nothing the page ran failed: no console error, no uncaught exception, no refused script or style (CSP).
  expect(browser.problems.messages.splice(0)).toEqual([]);
});

describe('the console in a browser', () => {
  it('is served at /console/ with a strict Content-Security-Policy and the security headers, no credential needed', async () => {
    const response = await fetch(consoleUrl);
    expect(response.status).toBe(200);
    const csp = response.headers.get('content-security-policy') ?? '';
    for (const directive of ["default-src 'self'", "script-src 'self'", "connect-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toContain('unsafe-inline');
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await response.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    const asset = await fetch(`${platform.gatewayUrl}${script}`);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
  });

  it('signs in with an API key, by keyboard, keeping it in session storage only', async () => {
    await page.goto(consoleUrl);
    await checkPage(page, 'sign-in');
    await page.getByLabel('API key or OAuth access token').focus();
    await page.keyboard.type(CONSOLE_KEYS.user);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Interns', level: 1, exact: true }).waitFor();
    const stored = await inPage<{ local: number; cookie: string; session: string }>(
      page,
      "({ local: localStorage.length, cookie: document.cookie, session: sessionStorage.getItem('interns.console.session') ?? '' })",
    );
    expect(stored).toMatchObject({ local: 0, cookie: '' });
    expect(stored.session).toContain(CONSOLE_KEYS.user);
    expect(page.url()).not.toContain(CONSOLE_KEYS.user);
    await page.getByText('No interns yet').waitFor();
    await page.getByText('Live', { exact: true }).waitFor();
    await checkPage(page, 'interns-empty');
  });

  it('creates an intern that reaches running with its progress shown, without a reload', async () => {
    await inPage(page, 'window.__sameDocument = true');
    await page.locator('#create-name').fill(internName);
    await page.locator('#create-description').fill('made in the console');
    await page.getByRole('button', { name: 'Create intern' }).click();
    const row = page.locator(`tr[data-intern="${internName}"]`);
    // The bar and its step's name, moved by the live events while the page stays as it is.
    await row.getByRole('progressbar', { name: `Provisioning ${internName}` }).and(row.locator('[aria-valuetext^="Step"]')).waitFor();
    await row.getByText('running', { exact: true }).waitFor({ timeout: 30_000 });
    expect(await row.getByRole('progressbar').count()).toBe(0);
    expect(await inPage(page, 'window.__sameDocument')).toBe(true);
    await checkPage(page, 'interns');
  });

  it('streams a chat answer as it is written', async () => {
    await page.getByRole('link', { name: internName }).click();
    await page.getByRole('heading', { name: internName, level: 1 }).waitFor();
    await sendPrompt(page, '/say part one\n/sleep 3000\n/say part two');
    await answerText(page).getByText('part one').waitFor();
    expect(await answerText(page).textContent()).not.toContain('part two');
    await answerText(page).getByText('part two').waitFor();
    await lastAnswer(page).getByRole('link', { name: /^Run details/ }).waitFor();
  });

  it('renders model output as inert text: no raw HTML, no javascript: link, images not loaded', async () => {
    await sendPrompt(page, `/say <img src=x onerror="window.__pwned='img'"> and <script>window.__pwned='script'</script>`);
    await answerText(page).getByText('<img src=x onerror=', { exact: false }).waitFor();
    expect(await lastAnswer(page).locator('img, script').count()).toBe(0);

    await sendPrompt(page, "/say [click me](javascript:window.__pwned='link') [docs](https://example.com/docs) ![pixel](https://example.com/p.png)");
    await answerText(page).getByText('click me').waitFor();
    expect(await lastAnswer(page).getByRole('link', { name: 'click me', exact: true }).count()).toBe(0);
    await answerText(page).getByText('click me').click();
    const docs = answerText(page).getByRole('link', { name: 'docs', exact: true });
    expect(await docs.getAttribute('href')).toBe('https://example.com/docs');
    expect(await docs.getAttribute('rel')).toBe('noopener noreferrer nofollow');
    expect(await lastAnswer(page).locator('img').count()).toBe(0);
    await answerText(page).getByText('[image: pixel]').waitFor();
    expect(await pwned()).toBeNull();
  });

  it('asks permission in manual mode with a card in place, and allow once runs the command', async () => {
    await page.getByLabel('Manual (ask me before the shell runs)').check();
    await sendPrompt(page, '/shell echo console-approved');
    const card = page.getByRole('group', { name: 'Permission needed' });
    await card.getByText('shell: echo console-approved').waitFor();
    await checkPage(page, 'chat');
    await card.getByRole('button', { name: 'Allow once' }).click();
    await answerText(page).getByText('console-approved').waitFor();
    expect(await card.count()).toBe(0);
  });

  it('answers a question from the inbox, then replays the run', async () => {
    await sendPrompt(page, '/ask What is your favourite colour?\n/say Thanks for answering');
    await lastAnswer(page).getByRole('form', { name: 'Question' }).waitFor();
    await openSection(page, 'Questions');
    const question = page.getByRole('form', { name: 'Question' });
    await question.getByText('What is your favourite colour?').waitFor();
    await checkPage(page, 'questions');
    await question.getByLabel('answer (required)').fill('blue');
    await question.getByRole('button', { name: 'Answer' }).click();
    await page.getByRole('link', { name: 'follow it under Runs' }).click();
    const replay = page.getByRole('article', { name: 'Run replay' });
    await replay.getByText('Thanks for answering').waitFor();
    await replay.getByText(/Replay complete/).waitFor();
    await replay.getByText('Asked: What is your favourite colour?').waitFor();
    await checkPage(page, 'runs');
  });

  it('cancels a background run from its row', async () => {
    await openSection(page, 'Chat');
    await page.getByLabel('Self-drive (consent on my behalf)').check();
    await page.getByLabel('Background (the run goes on if I leave this page)').check();
    await sendPrompt(page, '/say sleeping\n/sleep 60000\n/say never');
    await answerText(page).getByText('sleeping').waitFor();
    await openSection(page, 'Runs');
    const running = page.getByRole('row').filter({ has: page.getByText('running', { exact: true }) });
    await running.getByRole('button', { name: /Cancel the run/ }).click();
    await page.getByRole('row').filter({ has: page.getByText('cancelled', { exact: true }) }).first().waitFor({ timeout: 15_000 });
  });

  it('uploads files and downloads one, showing a hostile file name as text', async () => {
    await openSection(page, 'Files');
    await page.getByText('This folder is empty').waitFor();
    await page.getByLabel('Files to upload here').setInputFiles([
      { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('written in the browser\n') },
      { name: HOSTILE_FILE_NAME, mimeType: 'text/plain', buffer: Buffer.from('x') },
    ]);
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await page.getByText('Uploaded 2 files.').waitFor();
    await page.getByRole('rowheader', { name: HOSTILE_FILE_NAME }).waitFor();
    expect(await page.getByRole('region', { name: 'Files', exact: true }).locator('img').count()).toBe(0);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download notes.txt' }).click()]);
    expect(download.suggestedFilename()).toBe('notes.txt');
    expect(await readFile(await download.path(), 'utf8')).toBe('written in the browser\n');
    expect(await pwned()).toBeNull();
    await checkPage(page, 'files');
  });

  it('sets secrets whose values are never shown again, only fingerprints, and copies one into the intern', async () => {
    await openSection(page, 'Vault');
    const form = page.getByRole('form', { name: 'Set a secret' }).first();
    await form.getByLabel('Name').fill('github_token');
    await form.getByLabel('Value (never shown again)').fill(SECRET_VALUE);
    await form.getByLabel(/Hosts it is released to/).fill('api.github.com');
    await form.getByRole('button', { name: 'Set secret' }).click();
    await form.getByText(/Saved github_token: fingerprint [0-9a-f]{64}/).waitFor();
    await page.getByRole('region', { name: "This intern's secrets", exact: true }).getByRole('rowheader', { name: 'github_token' }).waitFor();
    expect(await pageHolds(page, SECRET_VALUE)).toBe(false);

    const workspaceForm = page.getByRole('form', { name: 'Set a secret' }).last();
    await workspaceForm.getByLabel('Name').fill('npm_token');
    await workspaceForm.getByLabel('Value (never shown again)').fill(SECRET_VALUE);
    await workspaceForm.getByLabel(/Hosts it is released to/).fill('registry.npmjs.org');
    await workspaceForm.getByRole('button', { name: 'Set secret' }).click();
    await page.getByLabel('Select npm_token to copy').check();
    await page.getByRole('button', { name: "Copy selected into this intern's vault" }).click();
    await page.getByRole('region', { name: "This intern's secrets", exact: true }).getByRole('rowheader', { name: 'npm_token' }).waitFor();
    expect(await pageHolds(page, SECRET_VALUE)).toBe(false);
    await checkPage(page, 'vault');
  });

  it('saves the egress policy, kept across a reload of the page', async () => {
    await openSection(page, 'Egress');
    const allow = page.getByLabel(/One host per line/);
    await expect(allow.inputValue()).resolves.toBe('');
    await allow.fill('pypi.org\n*.pythonhosted.org');
    await page.getByRole('button', { name: 'Save allowed hosts' }).click();
    await page.getByText('Saved.').waitFor();
    await page.reload();
    await page.getByRole('heading', { name: internName, level: 1 }).waitFor();
    // The field shows empty until the policy's own request answers: wait for it rather than read it before then.
    const allowAfterReload = page.getByLabel(/One host per line/);
    const allowId = await allowAfterReload.getAttribute('id');
    await page.waitForFunction(`(document.getElementById(${JSON.stringify(allowId)})?.value ?? '') !== ''`);
    await expect(allowAfterReload.inputValue()).resolves.toBe('pypi.org\n*.pythonhosted.org');
    await page.getByText('No requests yet').waitFor();
    await checkPage(page, 'egress');
  });

  it('adds a webhook, showing its secret once, and its deliveries', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByText('No endpoints yet').waitFor();
    await page.getByLabel('URL (https)').fill('http://127.0.0.1:9/console-hook');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByText(/^whsec_/).waitFor();
    await page.getByRole('heading', { name: 'http://127.0.0.1:9/console-hook' }).waitFor();
    await page.getByRole('button', { name: 'Show deliveries' }).click();
    await page.getByRole('button', { name: 'Hide deliveries' }).waitFor();
    await checkPage(page, 'webhooks');
  });

  it('fits a phone-width screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      for (const [name, link] of [['webhooks-phone', 'Webhooks'], ['interns-phone', 'Interns']] as const) {
        await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link }).click();
        await page.getByRole('heading', { name: link, level: 1, exact: true }).waitFor();
        expect(await inPage(page, FITS_WIDTH)).toBe(true);
        await checkPage(page, name);
      }
      await page.getByRole('link', { name: internName }).click();
      await page.getByRole('heading', { name: internName, level: 1 }).waitFor();
      expect(await inPage(page, FITS_WIDTH)).toBe(true);
      await checkPage(page, 'chat-phone');
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it('deletes an intern by keyboard, through a confirmation', async () => {
    const doomed = await platform.api('/api/v1/interns', { token: CONSOLE_KEYS.user, json: { name: `doomed-${internName}` } });
    expect(doomed.status).toBe(201);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Interns' }).click();
    const row = page.locator(`tr[data-intern="doomed-${internName}"]`);
    await row.waitFor();
    await row.getByRole('button', { name: `Delete doomed-${internName}` }).focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: `Delete doomed-${internName}?` });
    await dialog.waitFor();
    await checkPage(page, 'delete-dialog');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Delete' }).focus();
    await page.keyboard.press('Enter');
    await row.waitFor({ state: 'detached', timeout: 30_000 });
  });

  it('signs out, forgetting the credential', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key or OAuth access token').waitFor();
    expect(await inPage(page, 'sessionStorage.length')).toBe(0);
    expect(await pageHolds(page, CONSOLE_KEYS.user)).toBe(false);
  });

  it('shows analytics charts of the last 24 h to a management key', async () => {
    await signIn(page, consoleUrl, CONSOLE_KEYS.management, 'Analytics (management key)');
    await page.getByRole('heading', { name: /Analytics/, level: 1 }).waitFor();
    // The runs above reach analytics through JetStream shortly after they end; the page asks once per load.
    const deadline = Date.now() + 20_000;
    while (!(await page.getByText(/per hour: [1-9]\d* runs/).isVisible())) {
      if (Date.now() > deadline) throw new Error('the runs chart never counted the runs made above');
      await page.waitForTimeout(1000);
      await page.reload();
      await page.getByRole('figure').first().waitFor();
    }
    for (const chart of ['Runs', 'Tokens', 'Failures']) await page.getByRole('application', { name: `${chart} per hour` }).waitFor();
    expect(await page.locator('figure[data-chart="runs"] .recharts-bar-rectangle').count()).toBeGreaterThan(0);
    await checkPage(page, 'analytics');
  });
});
