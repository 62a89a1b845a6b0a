// Your account: display name and email, and a new password (your other sessions end when it changes).
import { useState } from 'preact/hooks';
import { put } from '../api';
import { fmtDate, fmtNumber } from '../format';
import { t } from '../i18n';
import { roleName } from '../labels';
import { setUser, useSession } from '../session';
import type { User } from '../types';
import { ErrorNote, Field, Page, toast, useAction } from '../ui';

export default function AccountPage() {
  const { user } = useSession();
  const me = user!;
  return (
    <Page title={t('account.title')}>
      <div class="grid-2">
        <Profile me={me} />
        <Password />
      </div>
      <section class="card">
        <h2>{t('account.about')}</h2>
        <dl class="facts">
          <div>
            <dt>{t('users.username')}</dt>
            <dd>{me.username}</dd>
          </div>
          <div>
            <dt>{t('users.role')}</dt>
            <dd>{roleName(me.role)}</dd>
          </div>
          <div>
            <dt>{t('common.quota')}</dt>
            <dd>{fmtNumber(me.quota)}</dd>
          </div>
          <div>
            <dt>{t('users.createdAt')}</dt>
            <dd>{fmtDate(me.created_at)}</dd>
          </div>
        </dl>
      </section>
    </Page>
  );
}

function Profile(props: { me: User }) {
  const [displayName, setDisplayName] = useState(props.me.display_name);
  const [email, setEmail] = useState(props.me.email);
  const action = useAction();
  return (
    <form
      class="card form"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => {
          setUser(await put<User>('/api/user/self', { display_name: displayName.trim(), email: email.trim() }));
          toast(t('common.saved'));
        });
      }}
    >
      <h2>{t('account.profile')}</h2>
      <ErrorNote error={action.error} />
      <Field label={t('users.displayName')}>
        <input name="display_name" maxLength={64} value={displayName} onInput={(e) => setDisplayName(e.currentTarget.value)} />
      </Field>
      <Field label={t('account.email')}>
        <input name="email" type="email" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
      </Field>
      <div class="form-actions">
        <button type="submit" class="primary" disabled={action.busy}>
          {t('common.save')}
        </button>
      </div>
    </form>
  );
}

function Password() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const action = useAction();
  const mismatch = again !== '' && next !== again;
  return (
    <form
      class="card form"
      onSubmit={(e) => {
        e.preventDefault();
        if (mismatch) return;
        void action.run(async () => {
          setUser(await put<User>('/api/user/self', { password: next, original_password: current }));
          setCurrent('');
          setNext('');
          setAgain('');
          toast(t('account.passwordChanged'));
        });
      }}
    >
      <h2>{t('account.password')}</h2>
      <p class="muted">{t('account.passwordHint')}</p>
      <ErrorNote error={action.error} />
      <Field label={t('account.currentPassword')}>
        <input
          name="original_password"
          type="password"
          autocomplete="current-password"
          required
          value={current}
          onInput={(e) => setCurrent(e.currentTarget.value)}
        />
      </Field>
      <Field label={t('account.newPassword')} hint={t('users.passwordHint')}>
        <input
          name="password"
          type="password"
          autocomplete="new-password"
          minLength={8}
          maxLength={128}
          required
          value={next}
          onInput={(e) => setNext(e.currentTarget.value)}
        />
      </Field>
      <Field label={t('account.repeatPassword')}>
        <input
          name="password_again"
          type="password"
          autocomplete="new-password"
          required
          aria-invalid={mismatch}
          value={again}
          onInput={(e) => setAgain(e.currentTarget.value)}
        />
      </Field>
      {mismatch && (
        <p class="text-bad small" role="alert">
          {t('account.mismatch')}
        </p>
      )}
      <div class="form-actions">
        <button type="submit" class="primary" disabled={action.busy || mismatch}>
          {t('account.changePassword')}
        </button>
      </div>
    </form>
  );
}
