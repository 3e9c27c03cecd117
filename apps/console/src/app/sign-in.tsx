import { useState, type FormEvent } from 'react';
import { CREDENTIAL_KINDS, identify } from './api/identify';
import type { CredentialKind, SignedIn } from './api/credential-store';
import { ErrorNote } from './ui/feedback';
import { useTitle } from './ui/use-title';

/** Paste an API key or OAuth access token and say what it is for; one request checks it (identify). */
export function SignIn({ onSignedIn }: { onSignedIn(signedIn: SignedIn): void }) {
  useTitle('Sign in');
  const [credential, setCredential] = useState('');
  const [kind, setKind] = useState<CredentialKind>('workspace');
  const [internId, setInternId] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await identify(credential.trim(), kind, kind === 'intern' ? internId.trim() : null));
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" className="sign-in">
      <h1>Interns console</h1>
      <form onSubmit={submit} className="card stack" aria-labelledby="sign-in-title">
        <h2 id="sign-in-title">Sign in</h2>
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
        <fieldset>
          <legend>Use it for</legend>
          {CREDENTIAL_KINDS.map((option) => (
            <label key={option.kind} className="checkbox">
              <input type="radio" name="kind" value={option.kind} checked={kind === option.kind} onChange={() => setKind(option.kind)} />
              {option.label}
            </label>
          ))}
        </fieldset>
        {kind === 'intern' ? (
          <label>
            Intern id
            <input name="intern-id" required value={internId} onChange={(event) => setInternId(event.target.value)} />
          </label>
        ) : null}
        <ErrorNote error={error} />
        <button type="submit" className="primary" disabled={busy || credential.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p className="hint">
          The credential stays in this tab's session storage only: signing out or closing the tab forgets it.
        </p>
      </form>
    </main>
  );
}
