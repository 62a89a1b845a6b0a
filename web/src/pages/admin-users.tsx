// Admin: users below your role — search, create, edit role/quota/group/status/password, delete.
import { useState } from 'preact/hooks';
import { del, get, post, put } from '../api';
import { RowButtons } from '../data-table';
import { ActionForm, CheckField, InputField, SelectField } from '../form';
import { fmtDate, fmtNumber } from '../format';
import { t } from '../i18n';
import { roleName } from '../labels';
import { SearchListPage, useSearchList } from '../paged-list';
import { useSession } from '../session';
import { ROLE, type User } from '../types';
import { askDelete, Badge, DialogFor, toast, useAction, useAsync } from '../ui';

export default function AdminUsersPage() {
  const state = useSearchList<User>('/api/user/');
  const [editing, setEditing] = useState<User | 'new' | null>(null);
  const { user: me } = useSession();

  const remove = (u: User) =>
    state.changeIfConfirmed(askDelete(t('users.deleteTitle'), t('users.deleteText', { name: u.username })), async () => {
      await del(`/api/user/${u.id}`);
      toast(t('users.deleted', { name: u.username }));
    });

  return (
    <SearchListPage
      title={t('users.title')}
      createLabel={t('users.create')}
      onCreate={() => setEditing('new')}
      state={state}
      searchLabel={t('users.searchLabel')}
      testId="users-table"
      rowKey={(u) => u.id}
      columns={[
        { head: t('users.username'), cell: (u) => u.username },
        { head: t('users.displayName'), cell: (u) => u.display_name },
        { head: t('users.role'), cell: (u) => roleName(u.role) },
        {
          head: t('common.status'),
          cell: (u) => <Badge tone={u.status === 1 ? 'ok' : 'muted'}>{u.status === 1 ? t('common.enabled') : t('common.disabled')}</Badge>,
        },
        { head: t('common.quota'), num: true, cell: (u) => fmtNumber(u.quota) },
        { head: t('users.used'), num: true, cell: (u) => fmtNumber(u.used_quota) },
        { head: t('users.group'), cell: (u) => u.group },
        { head: t('users.createdAt'), cell: (u) => fmtDate(u.created_at, false) },
      ]}
      actions={(u) =>
        // Yourself, and users of your role or above, are not yours to change.
        u.id !== me?.id && u.role < (me?.role ?? 0) && <RowButtons onEdit={() => setEditing(u)} onDelete={() => void remove(u)} />
      }
    >
      <DialogFor value={editing} title={(u) => (u === 'new' ? t('users.create') : t('users.edit', { name: u.username }))} onClose={() => setEditing(null)}>
        {(u) => (
          <UserForm
            user={u === 'new' ? undefined : u}
            onDone={(saved) => {
              setEditing(null);
              toast(u === 'new' ? t('users.created', { name: saved.username }) : t('common.saved'));
              state.list.reload();
            }}
            onCancel={() => setEditing(null)}
          />
        )}
      </DialogFor>
    </SearchListPage>
  );
}

function UserForm(props: { user?: User; onDone: (u: User) => void; onCancel: () => void }) {
  const { user: me } = useSession();
  const u = props.user;
  const [username, setUsername] = useState(u?.username ?? '');
  const [displayName, setDisplayName] = useState(u?.display_name ?? '');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState(String(u?.role ?? ROLE.common));
  const [quota, setQuota] = useState(String(u?.quota ?? 0));
  const [group, setGroup] = useState(u?.group ?? 'default');
  // The groups GROUP_RATIO names (and default), and the user's own if it names another (the API takes any name).
  const groups = useAsync(() => get<string[]>('/api/group/'), []);
  const groupChoices = [...new Set([...(groups.data ?? ['default']), group])].map((g) => ({ value: g, label: g }));
  const [enabled, setEnabled] = useState((u?.status ?? 1) === 1);
  const action = useAction();
  const roles = [ROLE.common, ROLE.admin, ROLE.root].filter((r) => r < (me?.role ?? 0));
  const submit = async () => {
    const body: Record<string, unknown> = {
      username: username.trim(),
      display_name: displayName.trim(),
      role: Number(role),
      quota: Number(quota) || 0,
      group,
    };
    if (password) body.password = password;
    if (u) {
      body.status = enabled ? 1 : 2;
      props.onDone(await put<User>(`/api/user/${u.id}`, body));
    } else props.onDone(await post<User>('/api/user/', body));
  };
  return (
    <ActionForm action={action} onSubmit={submit} onCancel={props.onCancel} submitLabel={u ? t('common.save') : t('users.create')}>
      <InputField
        label={t('users.username')}
        hint={t('users.usernameHint')}
        name="username"
        required
        maxLength={32}
        autocomplete="off"
        value={username}
        onValue={setUsername}
      />
      <InputField label={t('users.displayName')} name="display_name" maxLength={64} value={displayName} onValue={setDisplayName} />
      <InputField
        label={u ? t('users.newPassword') : t('users.password')}
        hint={u ? t('users.newPasswordHint') : t('users.passwordHint')}
        name="password"
        type="password"
        autocomplete="new-password"
        minLength={8}
        maxLength={128}
        required={!u}
        value={password}
        onValue={setPassword}
      />
      <div class="inline-form">
        <SelectField label={t('users.role')} name="role" value={role} onValue={setRole} choices={roles.map((r) => ({ value: r, label: roleName(r) }))} />
        <InputField label={t('common.quota')} name="quota" type="number" min={0} step={1} value={quota} onValue={setQuota} />
      </div>
      <SelectField label={t('users.group')} hint={t('users.groupHint')} name="group" value={group} onValue={setGroup} choices={groupChoices} />
      {u && (
        <CheckField name="enabled" checked={enabled} onChecked={setEnabled}>
          {t('users.enabledLabel')}
        </CheckField>
      )}
    </ActionForm>
  );
}
