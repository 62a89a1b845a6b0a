// Sign in with a username and password (the session cookie is set by the server, HttpOnly).
import { useState } from 'preact/hooks';
import { InputField } from '../form';
import { t } from '../i18n';
import { signIn } from '../session';
import { toggleTheme, useTheme } from '../theme';
import { ErrorNote, LanguageSelect, useAction } from '../ui';

export function LoginPage(props: { expired: boolean }) {
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
        <InputField label={t('login.username')} name="username" autocomplete="username" required value={username} onValue={setUsername} />
        <InputField
          label={t('login.password')}
          name="password"
          type="password"
          autocomplete="current-password"
          required
          value={password}
          onValue={setPassword}
        />
        <button type="submit" class="primary block" disabled={action.busy}>
          {action.busy ? t('login.signingIn') : t('login.signIn')}
        </button>
        <div class="login-tools">
          <LanguageSelect />
          <button type="button" aria-pressed={theme === 'dark'} onClick={toggleTheme}>
            {t('nav.darkTheme')}
          </button>
        </div>
      </form>
    </main>
  );
}
