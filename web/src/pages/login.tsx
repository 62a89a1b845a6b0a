// Sign in with a username and password (the session cookie is set by the server, HttpOnly).
import { useState } from 'preact/hooks';
import { LANGS, type Lang, setLang, t, useLang } from '../i18n';
import { signIn } from '../session';
import { setTheme, useTheme } from '../theme';
import { ErrorNote, Field, useAction } from '../ui';

export function LoginPage(props: { expired: boolean }) {
  const lang = useLang();
  const theme = useTheme();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction();
  return (
    <main id="main" class="login">
      <form
        class="card login-card"
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(() => signIn(username.trim(), password));
        }}
      >
        <h1>
          <img src="/favicon.svg" alt="" width="28" height="28" /> Switchyard
        </h1>
        <p class="muted">{t('login.intro')}</p>
        {props.expired && !action.error && (
          <p class="note info" role="status">
            {t('login.expired')}
          </p>
        )}
        <ErrorNote error={action.error} />
        <Field label={t('login.username')}>
          <input name="username" autocomplete="username" required value={username} onInput={(e) => setUsername(e.currentTarget.value)} />
        </Field>
        <Field label={t('login.password')}>
          <input
            name="password"
            type="password"
            autocomplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" class="primary block" disabled={action.busy}>
          {action.busy ? t('login.signingIn') : t('login.signIn')}
        </button>
        <div class="login-tools">
          <label>
            <span class="sr-only">{t('nav.language')}</span>
            <select value={lang} onChange={(e) => setLang(e.currentTarget.value as Lang)} data-testid="lang">
              {LANGS.map((l) => (
                <option key={l.id} value={l.id}>
                  {l.label}
                </option>
              ))}
            </select>
          </label>
          <button type="button" aria-pressed={theme === 'dark'} onClick={() => setTheme(theme === 'dark' ? 'light' : 'dark')}>
            {t('nav.darkTheme')}
          </button>
        </div>
      </form>
    </main>
  );
}
