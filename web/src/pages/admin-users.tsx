// Admin: users below your role — search, create, edit role/quota/status/password, delete.
import { useState } from 'preact/hooks';
import { call, del, post, put, query } from '../api';
import { fmtDate, fmtNumber } from '../format';
import { t } from '../i18n';
import { roleName } from '../labels';
import { useSession } from '../session';
import { ROLE, type User } from '../types';
import { Badge, confirmAction, Dialog, Empty, ErrorNote, Field, Loading, Page, Pager, toast, useAction, useAsync } from '../ui';

const PAGE_SIZE = 20;

export default function AdminUsersPage() {
  const [page, setPage] = useState(0);
  const [keyword, setKeyword] = useState('');
  const [search, setSearch] = useState('');
  const list = useAsync(async () => {
    const res = await call<User[]>('GET', `${search ? '/api/user/search' : '/api/user/'}${query({ p: page, page_size: PAGE_SIZE, keyword: search })}`);
    return { rows: res.data, total: Number(res.headers.get('x-total-count') ?? res.data.length) };
  }, [page, search]);
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<User | null>(null);
  const action = useAction();
  const { user: me } = useSession();

  const remove = async (u: User) => {
    if (!(await confirmAction({ title: t('users.deleteTitle'), message: t('users.deleteText', { name: u.username }), confirmLabel: t('common.delete') })))
      return;
    await action.run(async () => {
      await del(`/api/user/${u.id}`);
      toast(t('users.deleted', { name: u.username }));
      list.reload();
    });
  };

  return (
    <Page
      title={t('users.title')}
      actions={
        <button type="button" class="primary" onClick={() => setCreating(true)}>
          {t('users.create')}
        </button>
      }
    >
      <form
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          setPage(0);
          setSearch(keyword.trim());
        }}
      >
        <Field label={t('users.searchLabel')}>
          <input type="search" name="keyword" value={keyword} onInput={(e) => setKeyword(e.currentTarget.value)} />
        </Field>
        <button type="submit">{t('common.search')}</button>
      </form>
      <ErrorNote error={list.error} onRetry={list.reload} />
      <ErrorNote error={action.error} />
      {list.loading && !list.data ? (
        <Loading />
      ) : list.data?.rows.length === 0 ? (
        <Empty>{t('common.noMatches')}</Empty>
      ) : (
        <div class="table-wrap">
          <table data-testid="users-table">
            <thead>
              <tr>
                <th scope="col">{t('users.username')}</th>
                <th scope="col">{t('users.displayName')}</th>
                <th scope="col">{t('users.role')}</th>
                <th scope="col">{t('common.status')}</th>
                <th scope="col" class="num">
                  {t('common.quota')}
                </th>
                <th scope="col" class="num">
                  {t('users.used')}
                </th>
                <th scope="col">{t('users.createdAt')}</th>
                <th scope="col">
                  <span class="sr-only">{t('common.actions')}</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.data?.rows.map((u) => {
                const mine = u.id === me?.id || u.role >= (me?.role ?? 0);
                return (
                  <tr key={u.id}>
                    <td>{u.username}</td>
                    <td>{u.display_name}</td>
                    <td>{roleName(u.role)}</td>
                    <td>
                      <Badge tone={u.status === 1 ? 'ok' : 'muted'}>{u.status === 1 ? t('common.enabled') : t('common.disabled')}</Badge>
                    </td>
                    <td class="num">{fmtNumber(u.quota)}</td>
                    <td class="num">{fmtNumber(u.used_quota)}</td>
                    <td>{fmtDate(u.created_at, false)}</td>
                    <td class="row-actions">
                      {!mine && (
                        <>
                          <button type="button" onClick={() => setEditing(u)}>
                            {t('common.edit')}
                          </button>
                          <button type="button" class="danger" onClick={() => void remove(u)}>
                            {t('common.delete')}
                          </button>
                        </>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {list.data && <Pager page={page} pageSize={PAGE_SIZE} total={list.data.total} onPage={setPage} />}
      <Dialog open={creating} title={t('users.create')} onClose={() => setCreating(false)}>
        {creating && (
          <UserForm
            onDone={(u) => {
              setCreating(false);
              toast(t('users.created', { name: u.username }));
              list.reload();
            }}
            onCancel={() => setCreating(false)}
          />
        )}
      </Dialog>
      <Dialog open={!!editing} title={t('users.edit', { name: editing?.username ?? '' })} onClose={() => setEditing(null)}>
        {editing && (
          <UserForm
            user={editing}
            onDone={() => {
              setEditing(null);
              toast(t('common.saved'));
              list.reload();
            }}
            onCancel={() => setEditing(null)}
          />
        )}
      </Dialog>
    </Page>
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
  const [enabled, setEnabled] = useState((u?.status ?? 1) === 1);
  const action = useAction();
  const roles = [ROLE.common, ROLE.admin, ROLE.root].filter((r) => r < (me?.role ?? 0));
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const body: Record<string, unknown> = { username: username.trim(), display_name: displayName.trim(), role: Number(role), quota: Number(quota) || 0 };
      if (password) body.password = password;
      if (u) {
        body.status = enabled ? 1 : 2;
        props.onDone(await put<User>(`/api/user/${u.id}`, body));
      } else props.onDone(await post<User>('/api/user/', body));
    });
  };
  return (
    <form class="form" onSubmit={submit}>
      <ErrorNote error={action.error} />
      <Field label={t('users.username')} hint={t('users.usernameHint')}>
        <input name="username" required maxLength={32} autocomplete="off" value={username} onInput={(e) => setUsername(e.currentTarget.value)} />
      </Field>
      <Field label={t('users.displayName')}>
        <input name="display_name" maxLength={64} value={displayName} onInput={(e) => setDisplayName(e.currentTarget.value)} />
      </Field>
      <Field label={u ? t('users.newPassword') : t('users.password')} hint={u ? t('users.newPasswordHint') : t('users.passwordHint')}>
        <input
          name="password"
          type="password"
          autocomplete="new-password"
          minLength={8}
          maxLength={128}
          required={!u}
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
      </Field>
      <div class="inline-form">
        <Field label={t('users.role')}>
          <select name="role" value={role} onChange={(e) => setRole(e.currentTarget.value)}>
            {roles.map((r) => (
              <option key={r} value={r}>
                {roleName(r)}
              </option>
            ))}
          </select>
        </Field>
        <Field label={t('common.quota')}>
          <input name="quota" type="number" min={0} step={1} value={quota} onInput={(e) => setQuota(e.currentTarget.value)} />
        </Field>
      </div>
      {u && (
        <label class="check">
          <input type="checkbox" name="enabled" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
          {t('users.enabledLabel')}
        </label>
      )}
      <div class="form-actions">
        <button type="button" onClick={props.onCancel}>
          {t('common.cancel')}
        </button>
        <button type="submit" class="primary" disabled={action.busy}>
          {u ? t('common.save') : t('users.create')}
        </button>
      </div>
    </form>
  );
}
