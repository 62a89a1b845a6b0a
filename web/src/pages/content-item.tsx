// One content item: every field, the full text, and delete (its creator or an admin).
import { del, get } from '../api';
import { fmtDate, fmtNumber } from '../format';
import { t } from '../i18n';
import { navigate, onLinkClick } from '../router';
import type { PageProps } from '../types';
import type { ContentItem } from '../types';
import { confirmAction, ErrorNote, Loading, Page, toast, useAction, useAsync } from '../ui';

export default function ContentItemPage(props: PageProps) {
  const id = props.params.id!;
  const item = useAsync(() => get<ContentItem>(`/api/content/${encodeURIComponent(id)}`), [id]);
  const action = useAction();
  const remove = async () => {
    if (!(await confirmAction({ title: t('content.deleteTitle'), message: t('content.deleteText'), confirmLabel: t('common.delete') }))) return;
    await action.run(async () => {
      await del(`/api/content/${encodeURIComponent(id)}`);
      toast(t('content.deleted'));
      navigate('/content');
    });
  };
  const it = item.data;
  return (
    <Page
      title={it ? it.title || it.url : t('content.item')}
      actions={
        <>
          <a class="button" href="/content" onClick={(e) => onLinkClick(e, '/content')}>
            {t('content.back')}
          </a>
          {it && (
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
          <dl class="facts">
            <div>
              <dt>{t('content.source')}</dt>
              <dd>{it.source}</dd>
            </div>
            <div>
              <dt>{t('content.score')}</dt>
              <dd>{fmtNumber(it.score, 1)}</dd>
            </div>
            <div>
              <dt>URL</dt>
              <dd>
                <a href={it.url} target="_blank" rel="noopener noreferrer">
                  {it.url}
                </a>
              </dd>
            </div>
            <div>
              <dt>{t('content.analyzedBy')}</dt>
              <dd>{it.analyzedBy ?? '—'}</dd>
            </div>
            <div>
              <dt>{t('content.analyzedAt')}</dt>
              <dd>{fmtDate(it.analyzedAt)}</dd>
            </div>
            <div>
              <dt>{t('content.createdAt')}</dt>
              <dd>{fmtDate(it.createdAt)}</dd>
            </div>
            <div>
              <dt>{t('content.updatedAt')}</dt>
              <dd>{fmtDate(it.updatedAt)}</dd>
            </div>
          </dl>
          <h2>{t('content.summary')}</h2>
          <p>{it.summary}</p>
          <h2>{t('content.content')}</h2>
          <div class="prose">{it.content}</div>
        </article>
      )}
    </Page>
  );
}
