// Content: search (Chinese too), source and score filters, sort, infinite scroll on the API's keyset cursor, stats by source.
import { useEffect, useRef, useState } from 'preact/hooks';
import { call, get } from '../api';
import { BarList } from '../charts/bar-list';
import { InputField, SelectField } from '../form';
import { fmtDate, fmtNumber } from '../format';
import { t } from '../i18n';
import { onLinkClick, setSearch, useLocation } from '../router';
import type { ContentItem, ContentStats } from '../types';
import { Empty, ErrorNote, Loading, Page, useAsync } from '../ui';

const PAGE = 30;
const FILTERS = ['q', 'source', 'minScore', 'maxScore', 'orderBy', 'order'] as const;
type Filters = Record<(typeof FILTERS)[number], string>;

function filtersFrom(search: string): Filters {
  const q = new URLSearchParams(search);
  return {
    q: q.get('q') ?? '',
    source: q.get('source') ?? '',
    minScore: q.get('minScore') ?? '',
    maxScore: q.get('maxScore') ?? '',
    orderBy: q.get('orderBy') ?? 'score',
    order: q.get('order') ?? 'desc',
  };
}

function firstPageUrl(f: Filters): string {
  const q = new URLSearchParams({ limit: String(PAGE) });
  for (const k of FILTERS) if (f[k]) q.set(k, f[k]);
  return `/api/content?${q}`;
}

/** The rel="next" URL of a Link header (same origin, a path). */
function nextLink(header: string | null): string | null {
  const m = header && /<([^>]+)>\s*;\s*rel="?next"?/.exec(header);
  return m?.[1]?.startsWith('/') ? m[1] : null;
}

interface Listing {
  items: ContentItem[];
  next: string | null;
  total: number | null;
  estimated: boolean;
}

export default function ContentListPage() {
  const loc = useLocation();
  const filters = filtersFrom(loc.search);
  const [draft, setDraft] = useState<Filters>(filters);
  const stats = useAsync(() => get<ContentStats>('/api/stats'), []);
  const [listing, setListing] = useState<Listing | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(false);
  const seq = useRef(0);
  const sentinel = useRef<HTMLDivElement>(null);

  const load = async (url: string, append: boolean) => {
    const mine = ++seq.current;
    setLoading(true);
    setError(undefined);
    try {
      const res = await call<ContentItem[]>('GET', url);
      if (mine !== seq.current) return;
      const total = res.headers.get('x-total-count');
      setListing((prev) => ({
        items: append && prev ? [...prev.items, ...res.data] : res.data,
        next: nextLink(res.headers.get('link')),
        total: total === null ? null : Number(total),
        estimated: res.headers.get('x-total-count-estimated') === 'true',
      }));
    } catch (err) {
      if (mine === seq.current) setError(err);
    } finally {
      if (mine === seq.current) setLoading(false);
    }
  };

  const key = firstPageUrl(filters);
  useEffect(() => {
    setListing(null);
    void load(key, false);
  }, [key]);

  // Infinite scroll: the next page when the end of the list comes into view.
  useEffect(() => {
    const el = sentinel.current;
    if (!el || !listing?.next || loading || error) return;
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting) && listing.next) void load(listing.next, true);
    });
    observer.observe(el);
    return () => observer.disconnect();
  }, [listing, loading, error]);

  const apply = (f: Filters) => {
    const q = new URLSearchParams();
    for (const k of FILTERS) if (f[k] && !(k === 'orderBy' && f[k] === 'score') && !(k === 'order' && f[k] === 'desc')) q.set(k, f[k]);
    setSearch(q);
  };
  // Typing in the search box searches after a pause.
  useEffect(() => {
    if (draft.q === filters.q) return;
    // The filters in the URL when it fires, not when it was set: other filters may have changed meanwhile.
    const timer = setTimeout(() => apply({ ...filtersFrom(window.location.search), q: draft.q }), 350);
    return () => clearTimeout(timer);
  }, [draft.q]);

  const set = (k: keyof Filters, v: string) => setDraft((d) => ({ ...d, [k]: v }));
  const sources = Object.keys(stats.data?.bySource ?? {}).sort();

  return (
    <Page title={t('content.title')}>
      <div class="with-aside">
        <div>
          <form
            class="filters card"
            onSubmit={(e) => {
              e.preventDefault();
              apply(draft);
            }}
          >
            <InputField
              label={t('content.search')}
              fieldClass="grow"
              type="search"
              name="q"
              placeholder={t('content.searchPlaceholder')}
              value={draft.q}
              onValue={(v) => set('q', v)}
            />
            <SelectField
              label={t('content.source')}
              name="source"
              value={draft.source}
              onValue={(source) => {
                set('source', source);
                apply({ ...draft, source });
              }}
              choices={[{ value: '', label: t('content.allSources') }, ...sources.map((s) => ({ value: s, label: s }))]}
            />
            {(['minScore', 'maxScore'] as const).map((k) => (
              <InputField key={k} label={t(`content.${k}`)} name={k} type="number" min={0} max={10} step={0.1} value={draft[k]} onValue={(v) => set(k, v)} />
            ))}
            <SelectField
              label={t('content.sort')}
              name="sort"
              value={`${draft.orderBy}:${draft.order}`}
              onValue={(v) => {
                const [orderBy, order] = v.split(':') as [string, string];
                setDraft((d) => ({ ...d, orderBy, order }));
                apply({ ...draft, orderBy, order });
              }}
              choices={[
                { value: 'score:desc', label: t('content.sort.scoreDesc') },
                { value: 'score:asc', label: t('content.sort.scoreAsc') },
                { value: 'createdAt:desc', label: t('content.sort.newest') },
                { value: 'createdAt:asc', label: t('content.sort.oldest') },
                { value: 'analyzedAt:desc', label: t('content.sort.analyzedDesc') },
              ]}
            />
            <button type="submit">{t('common.apply')}</button>
          </form>
          <p class="muted" role="status" data-testid="content-count">
            {listing?.total !== null && listing?.total !== undefined
              ? t(listing.estimated ? 'content.countEstimated' : 'content.count', { n: fmtNumber(listing.total) })
              : ''}
          </p>
          <ErrorNote error={error} onRetry={() => void load(listing?.next ?? key, !!listing)} />
          {listing && listing.items.length === 0 && !loading && <Empty>{filters.q ? t('content.noMatches', { q: filters.q }) : t('content.none')}</Empty>}
          <ul class="items" data-testid="content-items">
            {listing?.items.map((item) => (
              <li key={item.id} class="item card">
                <a class="item-title" href={`/content/${item.id}`} onClick={(e) => onLinkClick(e, `/content/${item.id}`)}>
                  {item.title || item.url}
                </a>
                <p>{item.summary}</p>
                <div class="item-meta">
                  <span class="badge info">{item.source}</span>
                  <span>
                    {t('content.score')} <strong>{fmtNumber(item.score, 1)}</strong>
                  </span>
                  <span>{fmtDate(item.analyzedAt)}</span>
                </div>
              </li>
            ))}
          </ul>
          <div ref={sentinel} class="sentinel" />
          {loading && <Loading />}
          {listing?.next && !loading && (
            <button type="button" class="block" onClick={() => void load(listing.next!, true)}>
              {t('content.more')}
            </button>
          )}
        </div>
        <aside class="card">
          <h2>{t('content.bySource')}</h2>
          <ErrorNote error={stats.error} />
          {stats.data && (
            <>
              <p>{t('content.total', { n: fmtNumber(stats.data.total) })}</p>
              <BarList
                label={t('content.bySource')}
                rows={Object.entries(stats.data.bySource)
                  .sort((a, b) => b[1] - a[1])
                  .map(([label, value]) => ({ label, value }))}
              />
            </>
          )}
        </aside>
      </div>
    </Page>
  );
}
