// API keys: create (the whole key shown once, with a copy button), list masked, enable/disable, edit, delete.
import { useState } from 'preact/hooks';
import { call, del, post, put, query } from '../api';
import { fmtDate, fmtNumber, fromLocalInput, toLocalInput } from '../format';
import { t } from '../i18n';
import { forgetKey, rememberKey } from '../keys-memory';
import { navigate } from '../router';
import type { Token } from '../types';
import { Badge, confirmAction, CopyButton, Dialog, Empty, ErrorNote, Field, Loading, Page, Pager, type Tone, toast, useAction, useAsync } from '../ui';

const PAGE_SIZE = 20;

export function tokenStatus(s: number): { tone: Tone; label: string } {
  switch (s) {
    case 1:
      return { tone: 'ok', label: t('keys.status.enabled') };
    case 2:
      return { tone: 'muted', label: t('keys.status.disabled') };
    case 3:
      return { tone: 'warn', label: t('keys.status.expired') };
    default:
      return { tone: 'warn', label: t('keys.status.exhausted') };
  }
}

export default function KeysPage() {
  const [page, setPage] = useState(0);
  const [keyword, setKeyword] = useState('');
  const [search, setSearch] = useState('');
  const list = useAsync(async () => {
    const path = search ? '/api/token/search' : '/api/token/';
    const res = await call<Token[]>('GET', path + query({ p: page, page_size: PAGE_SIZE, keyword: search }));
    return { rows: res.data, total: Number(res.headers.get('x-total-count') ?? res.data.length) };
  }, [page, search]);
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<Token | null>(null);
  const [shown, setShown] = useState<Token | null>(null);
  const action = useAction();

  const toggle = (tok: Token) =>
    action.run(async () => {
      await put('/api/token/?status_only=1', { id: tok.id, status: tok.status === 1 ? 2 : 1 });
      list.reload();
    });
  const remove = async (tok: Token) => {
    if (
      !(await confirmAction({
        title: t('keys.deleteTitle'),
        message: t('keys.deleteText', { name: tok.name || `#${tok.id}` }),
        confirmLabel: t('common.delete'),
      }))
    )
      return;
    await action.run(async () => {
      await del(`/api/token/${tok.id}`);
      forgetKey(tok.id);
      toast(t('keys.deleted'));
      list.reload();
    });
  };

  return (
    <Page
      title={t('keys.title')}
      actions={
        <button type="button" class="primary" onClick={() => setCreating(true)}>
          {t('keys.create')}
        </button>
      }
    >
      <p class="muted">{t('keys.intro')}</p>
      <form
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          setPage(0);
          setSearch(keyword.trim());
        }}
      >
        <Field label={t('keys.searchLabel')}>
          <input type="search" value={keyword} onInput={(e) => setKeyword(e.currentTarget.value)} />
        </Field>
        <button type="submit">{t('common.search')}</button>
      </form>
      <ErrorNote error={list.error} onRetry={list.reload} />
      <ErrorNote error={action.error} />
      {list.loading && !list.data ? (
        <Loading />
      ) : list.data && list.data.rows.length === 0 ? (
        <Empty>{search ? t('common.noMatches') : t('keys.none')}</Empty>
      ) : (
        list.data && (
          <div class="table-wrap">
            <table data-testid="keys-table">
              <thead>
                <tr>
                  <th scope="col">{t('common.name')}</th>
                  <th scope="col">{t('keys.key')}</th>
                  <th scope="col">{t('common.status')}</th>
                  <th scope="col" class="num">
                    {t('keys.remaining')}
                  </th>
                  <th scope="col" class="num">
                    {t('keys.used')}
                  </th>
                  <th scope="col">{t('keys.expires')}</th>
                  <th scope="col">{t('keys.models')}</th>
                  <th scope="col">{t('keys.subnet')}</th>
                  <th scope="col">
                    <span class="sr-only">{t('common.actions')}</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.data.rows.map((tok) => {
                  const st = tokenStatus(tok.status);
                  return (
                    <tr key={tok.id}>
                      <td>{tok.name || <span class="muted">#{tok.id}</span>}</td>
                      <td>
                        <code>{tok.key}</code>
                      </td>
                      <td>
                        <Badge tone={st.tone}>{st.label}</Badge>
                      </td>
                      <td class="num">{tok.unlimited_quota ? t('keys.unlimited') : fmtNumber(tok.remain_quota)}</td>
                      <td class="num">{fmtNumber(tok.used_quota)}</td>
                      <td>{tok.expired_time === -1 ? t('keys.never') : fmtDate(tok.expired_time)}</td>
                      <td>{tok.models || <span class="muted">{t('keys.allModels')}</span>}</td>
                      <td>{tok.subnet || <span class="muted">{t('keys.anyAddress')}</span>}</td>
                      <td class="row-actions">
                        <button type="button" disabled={action.busy} onClick={() => void toggle(tok)}>
                          {tok.status === 1 ? t('common.disable') : t('common.enable')}
                        </button>
                        <button type="button" onClick={() => setEditing(tok)}>
                          {t('common.edit')}
                        </button>
                        <button type="button" class="danger" onClick={() => void remove(tok)}>
                          {t('common.delete')}
                        </button>
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )
      )}
      {list.data && <Pager page={page} pageSize={PAGE_SIZE} total={list.data.total} onPage={setPage} />}

      <Dialog open={creating} title={t('keys.create')} onClose={() => setCreating(false)}>
        {creating && (
          <TokenForm
            onDone={(tok) => {
              setCreating(false);
              rememberKey({ id: tok.id, name: tok.name, key: tok.key });
              setShown(tok);
              list.reload();
            }}
            onCancel={() => setCreating(false)}
          />
        )}
      </Dialog>
      <Dialog open={!!editing} title={t('keys.edit')} onClose={() => setEditing(null)}>
        {editing && (
          <TokenForm
            token={editing}
            onDone={() => {
              setEditing(null);
              toast(t('common.saved'));
              list.reload();
            }}
            onCancel={() => setEditing(null)}
          />
        )}
      </Dialog>
      <Dialog open={!!shown} title={t('keys.createdTitle')} onClose={() => setShown(null)}>
        {shown && (
          <div class="key-shown">
            <p class="note warn">{t('keys.shownOnce')}</p>
            <code class="secret" data-testid="new-key">
              {shown.key}
            </code>
            <div class="form-actions">
              <CopyButton text={shown.key} class="primary" />
              <button
                type="button"
                onClick={() => {
                  setShown(null);
                  navigate('/playground');
                }}
              >
                {t('keys.tryInPlayground')}
              </button>
              <button type="button" onClick={() => setShown(null)}>
                {t('common.done')}
              </button>
            </div>
          </div>
        )}
      </Dialog>
    </Page>
  );
}

/** Create (no `token`) or edit a key. */
export function TokenForm(props: { token?: Token; preset?: Partial<Token>; onDone: (t: Token) => void; onCancel: () => void }) {
  const init = props.token ?? props.preset;
  const [name, setName] = useState(init?.name ?? '');
  const [unlimited, setUnlimited] = useState(init?.unlimited_quota ?? true);
  const [remain, setRemain] = useState(String(init?.remain_quota ?? 0));
  const [never, setNever] = useState((init?.expired_time ?? -1) === -1);
  const [expires, setExpires] = useState(init?.expired_time && init.expired_time > 0 ? toLocalInput(init.expired_time) : '');
  const [models, setModels] = useState(init?.models ?? '');
  const [subnet, setSubnet] = useState(init?.subnet ?? '');
  const action = useAction();

  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const body = {
        name: name.trim(),
        unlimited_quota: unlimited,
        remain_quota: Number(remain) || 0,
        expired_time: never ? -1 : (fromLocalInput(expires) ?? -1),
        models: models.trim(),
        subnet: subnet.trim(),
      };
      const tok = props.token ? await put<Token>(`/api/token/${props.token.id}`, body) : await post<Token>('/api/token/', body);
      props.onDone(tok);
    });
  };
  return (
    <form class="form" onSubmit={submit}>
      <ErrorNote error={action.error} />
      <Field label={t('common.name')}>
        <input name="name" maxLength={50} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <label class="check">
        <input type="checkbox" name="unlimited" checked={unlimited} onChange={(e) => setUnlimited(e.currentTarget.checked)} />
        {t('keys.unlimitedLabel')}
      </label>
      {!unlimited && (
        <Field label={t('keys.remaining')} hint={t('keys.remainingHint')}>
          <input name="remain_quota" type="number" min={0} step={1} value={remain} onInput={(e) => setRemain(e.currentTarget.value)} />
        </Field>
      )}
      <label class="check">
        <input type="checkbox" name="never" checked={never} onChange={(e) => setNever(e.currentTarget.checked)} />
        {t('keys.neverExpires')}
      </label>
      {!never && (
        <Field label={t('keys.expires')}>
          <input name="expires" type="datetime-local" required value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
        </Field>
      )}
      <Field label={t('keys.models')} hint={t('keys.modelsHint')}>
        <input name="models" value={models} placeholder="local-hash-v1" onInput={(e) => setModels(e.currentTarget.value)} />
      </Field>
      <Field label={t('keys.subnet')} hint={t('keys.subnetHint')}>
        <input name="subnet" value={subnet} placeholder="10.0.0.0/8, 127.0.0.1" onInput={(e) => setSubnet(e.currentTarget.value)} />
      </Field>
      <div class="form-actions">
        <button type="button" onClick={props.onCancel}>
          {t('common.cancel')}
        </button>
        <button type="submit" class="primary" disabled={action.busy}>
          {props.token ? t('common.save') : t('keys.create')}
        </button>
      </div>
    </form>
  );
}
