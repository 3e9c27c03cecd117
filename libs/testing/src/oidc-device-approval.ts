/**
 * The user's side of a device-flow login against `OidcProviderServer`, over real HTTP as a browser without
 * JavaScript would do it: open the verification URI, enter the code, confirm, sign in as a member, then consent
 * or deny. Cookies are kept per run; redirects are followed by hand so each Set-Cookie is seen.
 */

export interface DeviceApproval {
  verificationUri: string;
  userCode: string;
  member: string;
  /** `deny`: sign in, then refuse at the consent step (the poller gets access_denied). Default `approve`. */
  decision?: 'approve' | 'deny';
  /** For the whole walk; default 10 s. */
  timeoutMs?: number;
}

export type DeviceApprovalOutcome = 'approved' | 'denied';

interface Page {
  url: string;
  status: number;
  html: string;
}

interface Form {
  action: string;
  fields: Record<string, string>;
}

const MAX_STEPS = 8;
const MAX_REDIRECTS = 10;

/** Walks the pages until the server says approved or denied; throws on anything unexpected, with the page. */
export async function approveDeviceLogin(approval: DeviceApproval): Promise<DeviceApprovalOutcome> {
  const browser = new FormBrowser(AbortSignal.timeout(approval.timeoutMs ?? 10_000));
  let current = await browser.open(approval.verificationUri);
  for (let step = 0; step < MAX_STEPS; step++) {
    switch (pageName(current)) {
      case 'device-input':
        current = await browser.submit(formIn(current, 'op.deviceInputForm'), { user_code: approval.userCode });
        break;
      case 'device-confirm':
        current = await browser.submit(formIn(current, 'op.deviceConfirmForm'));
        break;
      case 'login':
        current = await browser.submit(formIn(current, 'login'), { member: approval.member });
        break;
      case 'consent':
        current = await browser.submit(formIn(current, approval.decision === 'deny' ? 'abort' : 'consent'));
        break;
      case 'device-success':
        return 'approved';
      case 'device-denied':
        return 'denied';
      default:
        throw new Error(`unexpected page at ${current.url} (HTTP ${current.status}): ${current.html.slice(0, 300)}`);
    }
  }
  throw new Error(`no outcome after ${MAX_STEPS} pages; last at ${current.url}`);
}

function pageName(page: Page): string | null {
  return /<body data-page="([\w-]+)"/.exec(page.html)?.[1] ?? null;
}

/** The form with this id: its action and its hidden fields (the xsrf token, the code, `confirm`). */
function formIn(page: Page, id: string): Form {
  const forms = page.html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g);
  for (const [, attributes, inner] of forms) {
    if (attributeOf(attributes, 'id') !== id) continue;
    const fields: Record<string, string> = {};
    for (const [input] of inner.matchAll(/<input\b[^>]*>/g)) {
      const name = attributeOf(input, 'name');
      if (name !== null && attributeOf(input, 'type') === 'hidden') fields[name] = attributeOf(input, 'value') ?? '';
    }
    return { action: new URL(attributeOf(attributes, 'action') ?? page.url, page.url).href, fields };
  }
  throw new Error(`no form ${id} at ${page.url}: ${page.html.slice(0, 300)}`);
}

function attributeOf(tag: string, name: string): string | null {
  const value = new RegExp(`\\b${name}="([^"]*)"`).exec(tag)?.[1];
  return value === undefined ? null : value.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code))).replace(/&amp;/g, '&');
}

/** fetch with a cookie jar (name -> value: one host, and oidc-provider's paths do not overlap in conflicting ways). */
class FormBrowser {
  private readonly cookies = new Map<string, string>();

  constructor(private readonly signal: AbortSignal) {}

  open(url: string): Promise<Page> {
    return this.follow(url, { method: 'GET' });
  }

  submit(form: Form, values: Record<string, string> = {}): Promise<Page> {
    const body = new URLSearchParams({ ...form.fields, ...values }).toString();
    return this.follow(form.action, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  }

  private async follow(url: string, init: { method: string; body?: string; headers?: Record<string, string> }): Promise<Page> {
    let target = url;
    let request = init;
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const response = await fetch(target, {
        ...request,
        headers: { ...request.headers, cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
        redirect: 'manual',
        signal: this.signal,
      });
      this.remember(response.headers.getSetCookie());
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location !== null) {
        await response.body?.cancel();
        target = new URL(location, target).href;
        request = { method: 'GET' };
        continue;
      }
      return { url: target, status: response.status, html: await response.text() };
    }
    throw new Error(`more than ${MAX_REDIRECTS} redirects from ${url}`);
  }

  private remember(setCookies: string[]): void {
    for (const line of setCookies) {
      const [pair, ...attributes] = line.split(';');
      const separator = pair.indexOf('=');
      const name = pair.slice(0, separator).trim();
      const value = pair.slice(separator + 1).trim();
      const expired = attributes.some((attribute) => {
        const [key, setting = ''] = attribute.trim().split('=');
        if (key.toLowerCase() === 'max-age') return Number(setting) <= 0;
        return key.toLowerCase() === 'expires' && Date.parse(setting) <= Date.now();
      });
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
}
