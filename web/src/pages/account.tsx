// Your account: display name and email, a new password (your other sessions end when it changes), and root's own quota.
import { useState } from 'preact/hooks';
import { get, put } from '../api';
import { ActionForm, InputField } from '../form';
import { fmtDate, fmtNumber } from '../format';
import { t } from '../i18n';
import { roleName } from '../labels';
import { setUser, useSession } from '../session';
import type { Status, User } from '../types';
import { Facts, Page, toast, useAction, useAsync } from '../ui';

export default function AccountPage() {
  const { user } = useSession();
  const me = user!;
  return (
    <Page title={t('account.title')}>
      <div class="grid-2">
        <Profile me={me} />
        <Password />
      </div>
      <OwnQuota me={me} />
      <section class="card">
        <h2>{t('account.about')}</h2>
        <Facts
          facts={[
            { label: t('users.username'), value: me.username },
            { label: t('users.role'), value: roleName(me.role) },
            { label: t('users.group'), value: me.group },
            { label: t('common.quota'), value: fmtNumber(me.quota) },
            { label: t('users.createdAt'), value: fmtDate(me.created_at) },
          ]}
        />
      </section>
    </Page>
  );
}

function Profile(props: { me: User }) {
  const [displayName, setDisplayName] = useState(props.me.display_name);
  const [email, setEmail] = useState(props.me.email);
  const action = useAction();
  return (
    <ActionForm
      class="card form"
      action={action}
      onSubmit={async () => {
        setUser(await put<User>('/api/user/self', { display_name: displayName.trim(), email: email.trim() }));
        toast(t('common.saved'));
      }}
      submitLabel={t('common.save')}
      head={<h2>{t('account.profile')}</h2>}
    >
      <InputField label={t('users.displayName')} name="display_name" maxLength={64} value={displayName} onValue={setDisplayName} />
      <InputField label={t('account.email')} name="email" type="email" value={email} onValue={setEmail} />
    </ActionForm>
  );
}

/**
 * Root's own quota (admins' too where the server allows it: /api/status's own_quota_min_role): nobody is above root to
 * give it any, and its calls to priced models are charged like anyone's.
 */
function OwnQuota(props: { me: User }) {
  const status = useAsync(() => get<Status>('/api/status'), []);
  const [quota, setQuota] = useState(String(props.me.quota));
  const action = useAction();
  if (!status.data || props.me.role < status.data.own_quota_min_role) return null;
  return (
    <ActionForm
      class="card form"
      action={action}
      onSubmit={async () => {
        const me = await put<User>('/api/user/self', { quota: Number(quota) });
        setUser(me);
        setQuota(String(me.quota));
        toast(t('common.saved'));
      }}
      submitLabel={t('common.save')}
      head={
        <>
          <h2>{t('account.ownQuota')}</h2>
          <p class="muted">{t('account.ownQuotaHint')}</p>
        </>
      }
    >
      <InputField label={t('common.quota')} name="own_quota" type="number" min={0} step={1} required value={quota} onValue={setQuota} />
    </ActionForm>
  );
}

function Password() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const action = useAction();
  const mismatch = again !== '' && next !== again;
  return (
    <ActionForm
      class="card form"
      action={action}
      onSubmit={async () => {
        setUser(await put<User>('/api/user/self', { password: next, original_password: current }));
        setCurrent('');
        setNext('');
        setAgain('');
        toast(t('account.passwordChanged'));
      }}
      blocked={mismatch}
      submitLabel={t('account.changePassword')}
      head={
        <>
          <h2>{t('account.password')}</h2>
          <p class="muted">{t('account.passwordHint')}</p>
        </>
      }
    >
      <InputField
        label={t('account.currentPassword')}
        name="original_password"
        type="password"
        autocomplete="current-password"
        required
        value={current}
        onValue={setCurrent}
      />
      <InputField
        label={t('account.newPassword')}
        hint={t('users.passwordHint')}
        name="password"
        type="password"
        autocomplete="new-password"
        minLength={8}
        maxLength={128}
        required
        value={next}
        onValue={setNext}
      />
      <InputField
        label={t('account.repeatPassword')}
        name="password_again"
        type="password"
        autocomplete="new-password"
        required
        aria-invalid={mismatch}
        value={again}
        onValue={setAgain}
      />
      {mismatch && (
        <p class="text-bad small" role="alert">
          {t('account.mismatch')}
        </p>
      )}
    </ActionForm>
  );
}
