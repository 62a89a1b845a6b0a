// Admin: redemption codes — create N at once (copy them all), list, disable/enable, delete.
import { useState } from 'preact/hooks';
import { call, del, post, put, query } from '../api';
import { fmtDate, fmtNumber } from '../format';
import { t } from '../i18n';
import type { Redemption } from '../types';
import { Badge, CopyButton, confirmAction, Dialog, Empty, ErrorNote, Field, Loading, Page, Pager, type Tone, toast, useAction, useAsync } from '../ui';

const PAGE_SIZE = 20;

function codeStatus(s: number): { tone: Tone; label: string } {
  if (s === 1) return { tone: 'ok', label: t('codes.status.unused') };
  if (s === 3) return { tone: 'info', label: t('codes.status.used') };
  return { tone: 'muted', label: t('common.disabled') };
}

export default function AdminRedemptionsPage() {
  const [page, setPage] = useState(0);
  const [keyword, setKeyword] = useState('');
  const [search, setSearch] = useState('');
  const list = useAsync(async () => {
    const res = await call<Redemption[]>(
      'GET',
      `${search ? '/api/redemption/search' : '/api/redemption/'}${query({ p: page, page_size: PAGE_SIZE, keyword: search })}`,
    );
    return { rows: res.data, total: Number(res.headers.get('x-total-count') ?? res.data.length) };
  }, [page, search]);
  const [creating, setCreating] = useState(false);
  const [made, setMade] = useState<string[] | null>(null);
  const action = useAction();

  const toggle = (r: Redemption) =>
    action.run(async () => {
      await put('/api/redemption/?status_only=1', { id: r.id, status: r.status === 1 ? 2 : 1 });
      list.reload();
    });
  const remove = async (r: Redemption) => {
    if (!(await confirmAction({ title: t('codes.deleteTitle'), message: t('codes.deleteText', { name: r.name, id: r.id }), confirmLabel: t('common.delete') })))
      return;
    await action.run(async () => {
      await del(`/api/redemption/${r.id}`);
      list.reload();
    });
  };

  return (
    <Page
      title={t('codes.title')}
      actions={
        <button type="button" class="primary" onClick={() => setCreating(true)}>
          {t('codes.create')}
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
        <Field label={t('codes.searchLabel')}>
          <input type="search" name="keyword" value={keyword} onInput={(e) => setKeyword(e.currentTarget.value)} />
        </Field>
        <button type="submit">{t('common.search')}</button>
      </form>
      <ErrorNote error={list.error} onRetry={list.reload} />
      <ErrorNote error={action.error} />
      {list.loading && !list.data ? (
        <Loading />
      ) : list.data?.rows.length === 0 ? (
        <Empty>{search ? t('common.noMatches') : t('codes.none')}</Empty>
      ) : (
        <div class="table-wrap">
          <table data-testid="codes-table">
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">{t('common.name')}</th>
                <th scope="col">{t('codes.code')}</th>
                <th scope="col" class="num">
                  {t('common.quota')}
                </th>
                <th scope="col">{t('common.status')}</th>
                <th scope="col">{t('codes.createdAt')}</th>
                <th scope="col">{t('codes.redeemedAt')}</th>
                <th scope="col">
                  <span class="sr-only">{t('common.actions')}</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.data?.rows.map((r) => {
                const st = codeStatus(r.status);
                return (
                  <tr key={r.id}>
                    <td>{r.id}</td>
                    <td>{r.name}</td>
                    <td>
                      <code>{r.key}</code>
                    </td>
                    <td class="num">{fmtNumber(r.quota)}</td>
                    <td>
                      <Badge tone={st.tone}>{st.label}</Badge>
                    </td>
                    <td>{fmtDate(r.created_time)}</td>
                    <td>{fmtDate(r.redeemed_time) || '—'}</td>
                    <td class="row-actions">
                      {r.status !== 3 && (
                        <>
                          <CopyButton text={r.key} />
                          <button type="button" disabled={action.busy} onClick={() => void toggle(r)}>
                            {r.status === 1 ? t('common.disable') : t('common.enable')}
                          </button>
                        </>
                      )}
                      <button type="button" class="danger" onClick={() => void remove(r)}>
                        {t('common.delete')}
                      </button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {list.data && <Pager page={page} pageSize={PAGE_SIZE} total={list.data.total} onPage={setPage} />}
      <Dialog open={creating} title={t('codes.create')} onClose={() => setCreating(false)}>
        {creating && (
          <CreateCodes
            onDone={(codes) => {
              setCreating(false);
              setMade(codes);
              toast(t('codes.made', { n: codes.length }));
              list.reload();
            }}
            onCancel={() => setCreating(false)}
          />
        )}
      </Dialog>
      <Dialog open={!!made} title={t('codes.madeTitle', { n: made?.length ?? 0 })} onClose={() => setMade(null)}>
        {made && (
          <div class="form">
            <textarea class="codes" readOnly rows={Math.min(12, made.length + 1)} data-testid="new-codes" value={made.join('\n')} />
            <div class="form-actions">
              <CopyButton text={made.join('\n')} label={t('codes.copyAll')} class="primary" />
              <button type="button" onClick={() => setMade(null)}>
                {t('common.done')}
              </button>
            </div>
          </div>
        )}
      </Dialog>
    </Page>
  );
}

function CreateCodes(props: { onDone: (codes: string[]) => void; onCancel: () => void }) {
  const [name, setName] = useState('');
  const [quota, setQuota] = useState('1000');
  const [count, setCount] = useState('1');
  const action = useAction();
  return (
    <form
      class="form"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => props.onDone(await post<string[]>('/api/redemption/', { name: name.trim(), quota: Number(quota), count: Number(count) })));
      }}
    >
      <ErrorNote error={action.error} />
      <Field label={t('common.name')} hint={t('codes.nameHint')}>
        <input name="name" required maxLength={20} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <div class="inline-form">
        <Field label={t('codes.quotaEach')}>
          <input name="quota" type="number" min={1} step={1} required value={quota} onInput={(e) => setQuota(e.currentTarget.value)} />
        </Field>
        <Field label={t('codes.count')}>
          <input name="count" type="number" min={1} max={100} step={1} required value={count} onInput={(e) => setCount(e.currentTarget.value)} />
        </Field>
      </div>
      <div class="form-actions">
        <button type="button" onClick={props.onCancel}>
          {t('common.cancel')}
        </button>
        <button type="submit" class="primary" disabled={action.busy}>
          {t('codes.create')}
        </button>
      </div>
    </form>
  );
}
