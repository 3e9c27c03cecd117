import { useState, type FormEvent } from 'react';
import { identify, InternIdNeeded } from './api/identify';
import type { SignedIn } from './api/credential-store';
import { ErrorNote } from './ui/feedback';
import { useTitle } from './ui/use-title';

/** Paste an API key or OAuth access token; what it may do is asked of the API (identify). */
export function SignIn({ onSignedIn }: { onSignedIn(signedIn: SignedIn): void }) {
  useTitle('Sign in');
  const [credential, setCredential] = useState('');
  const [internId, setInternId] = useState('');
  const [needsInternId, setNeedsInternId] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await identify(credential.trim(), needsInternId ? internId.trim() : null));
    } catch (failure) {
      if (failure instanceof InternIdNeeded) setNeedsInternId(true);
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" className="sign-in">
      <h1>Interns console</h1>
      <form onSubmit={submit} className="card stack">
        <h2>Sign in</h2>
        <label>
          API key or OAuth access token
          <input
            type="password"
            name="credential"
            autoComplete="off"
            spellCheck={false}
            required
            value={credential}
            onChange={(event) => setCredential(event.target.value)}
          />
        </label>
        {needsInternId ? (
          <label>
            Intern id (an intern key sees only its intern)
            <input name="intern-id" required value={internId} onChange={(event) => setInternId(event.target.value)} />
          </label>
        ) : null}
        <ErrorNote error={error} />
        <button type="submit" className="primary" disabled={busy || credential.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p className="hint">
          The credential stays in this tab's session storage only: signing out or closing the tab forgets it. A user or
          organization key (or a token with the <code>interns</code> scope) manages interns; a management key shows analytics.
        </p>
      </form>
    </main>
  );
}
