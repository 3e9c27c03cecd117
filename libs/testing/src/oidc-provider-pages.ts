/**
 * The test authorization server's pages: bare HTML forms, each page marked with `data-page` so the headless
 * user (`approveDeviceLogin`) knows where it is. oidc-provider's default device pages would also work but
 * pull web fonts and warn on every render.
 */

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(name: string, body: string): string {
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${name}</title></head><body data-page="${name}">${body}</body></html>`;
}

interface PageContext {
  body: unknown;
}

/** `features.deviceFlow` page sources; `form` is oidc-provider's own (with its xsrf field). */
export const devicePages = {
  userCodeInputSource(ctx: PageContext, form: string, _out: unknown, error?: Error & { userCode?: string }): void {
    // An interaction that ended in access_denied lands here as an AbortedError.
    if (error?.name === 'AbortedError') {
      ctx.body = page('device-denied', '<p>The sign-in was denied.</p>');
    } else {
      const message = error === undefined ? 'Enter the code shown on your device' : `Error: ${escapeHtml(error.message)}`;
      ctx.body = page(error === undefined ? 'device-input' : 'device-error', `<p>${message}</p>${form}`);
    }
  },
  userCodeConfirmSource(ctx: PageContext, form: string, _client: unknown, _deviceInfo: unknown, userCode: string): void {
    ctx.body = page('device-confirm', `<p>Confirm the code <code>${escapeHtml(userCode)}</code></p>${form}`);
  },
  successSource(ctx: PageContext): void {
    ctx.body = page('device-success', '<p>Sign-in complete; return to your device.</p>');
  },
};

/** The sign-in or consent step of interaction `uid`, with a way to deny. */
export function interactionPage(prompt: string, uid: string): string {
  const base = `/interaction/${encodeURIComponent(uid)}`;
  const deny = `<form id="abort" method="post" action="${base}/abort"></form>`;
  if (prompt === 'login') {
    return page('login', `<form id="login" method="post" action="${base}/login"><input type="text" name="member"></form>${deny}`);
  }
  if (prompt === 'consent') return page('consent', `<form id="consent" method="post" action="${base}/consent"></form>${deny}`);
  return page('unsupported', `<p>unsupported prompt ${escapeHtml(prompt)}</p>${deny}`);
}
