// One content item: every field, the full text, and delete (for those who may: the server's Allow header says so).
import { call, del } from '../api';
import { fmtDate, fmtNumber } from '../format';
import { t } from '../i18n';
import { navigate, onLinkClick } from '../router';
import type { ContentItem, PageProps } from '../types';
import { askDelete, ErrorNote, Facts, Loading, Page, toast, useAction, useAsync } from '../ui';

export default function ContentItemPage(props: PageProps) {
  const id = props.params.id!;
  const item = useAsync(async () => {
    const res = await call<ContentItem>('GET', `/api/content/${encodeURIComponent(id)}`);
    const allowed = (res.headers.get('allow') ?? '').split(',').map((m) => m.trim());
    return { ...res.data, canDelete: allowed.includes('DELETE') };
  }, [id]);
  const action = useAction();
  const remove = () =>
    action.runIfConfirmed(askDelete(t('content.deleteTitle'), t('content.deleteText')), async () => {
      await del(`/api/content/${encodeURIComponent(id)}`);
      toast(t('content.deleted'));
      navigate('/content');
    });
  const it = item.data;
  return (
    <Page
      title={it ? it.title || it.url : t('content.item')}
      actions={
        <>
          <a class="button" href="/content" onClick={(e) => onLinkClick(e, '/content')}>
            {t('content.back')}
          </a>
          {/* Offered to those who may delete it only (its creator, an admin above them, root): others would get a 403. */}
          {it?.canDelete && (
            <button type="button" class="danger" disabled={action.busy} onClick={() => void remove()}>
              {t('common.delete')}
            </button>
          )}
        </>
      }
    >
      <ErrorNote error={item.error} />
      <ErrorNote error={action.error} />
      {item.loading && !it && <Loading />}
      {it && (
        <article class="card">
          <Facts
            facts={[
              { label: t('content.source'), value: it.source },
              { label: t('content.score'), value: fmtNumber(it.score, 1) },
              {
                label: 'URL',
                value: (
                  <a href={it.url} target="_blank" rel="noopener noreferrer">
                    {it.url}
                  </a>
                ),
              },
              { label: t('content.analyzedBy'), value: it.analyzedBy ?? '—' },
              { label: t('content.analyzedAt'), value: fmtDate(it.analyzedAt) },
              { label: t('content.createdAt'), value: fmtDate(it.createdAt) },
              { label: t('content.updatedAt'), value: fmtDate(it.updatedAt) },
            ]}
          />
          <h2>{t('content.summary')}</h2>
          <p>{it.summary}</p>
          <h2>{t('content.content')}</h2>
          <div class="prose">{it.content}</div>
        </article>
      )}
    </Page>
  );
}
