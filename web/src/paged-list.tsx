// Paged lists from the one-api style endpoints (`?p=&page_size=`, the total in X-Total-Count), changes made from a
// list, and the pages built on them (users, channels, codes, keys): a search box, the rows as a table with their
// buttons, a pager.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { call, query } from './api';
import { LoadedTable, type TableProps } from './data-table';
import { InputField } from './form';
import { t } from './i18n';
import { type Action, type Async, type ConfirmOptions, ErrorNote, Page, Pager, useAction, useAsync } from './ui';

export const PAGE_SIZE = 20;

export interface Rows<T> {
  rows: T[];
  total: number;
  /** The total was counted only up to a cap (there may be more). */
  capped: boolean;
}

/** One page of a list endpoint and its total. */
export async function getRows<T>(path: string): Promise<Rows<T>> {
  const res = await call<T[]>('GET', path);
  return {
    rows: res.data,
    total: Number(res.headers.get('x-total-count') ?? res.data.length),
    capped: res.headers.get('x-total-count-capped') === 'true',
  };
}

/** Changes made from a list (enable, disable, delete): `action` holds their state, and the list reloads after each. */
export interface ListChanges {
  action: Action;
  /** Runs `fn` as the action, then reloads the list. */
  change: (fn: () => Promise<unknown>) => Promise<void>;
  /** The same after asking first, and only when confirmed. */
  changeIfConfirmed: (ask: ConfirmOptions, fn: () => Promise<unknown>) => Promise<void>;
}

export function useListChanges(list: { reload: () => void }): ListChanges {
  const action = useAction();
  const then = (fn: () => Promise<unknown>) => async () => {
    await fn();
    list.reload();
  };
  return {
    action,
    change: async (fn) => {
      await action.run(then(fn));
    },
    changeIfConfirmed: (ask, fn) => action.runIfConfirmed(ask, then(fn)),
  };
}

export interface SearchList<T> extends ListChanges {
  list: Async<Rows<T>>;
  page: number;
  setPage: (page: number) => void;
  /** The keyword searched for ('' for the whole list). */
  search: string;
  /** Searches for `keyword` (trimmed; '' lists all) from the first page. */
  find: (keyword: string) => void;
}

/** A page of `base` (`/api/user/`), or of `${base}search` while a keyword is searched for, and changes to its rows. */
export function useSearchList<T>(base: string): SearchList<T> {
  const [page, setPage] = useState(0);
  const [search, setSearch] = useState('');
  const list = useAsync(() => getRows<T>(`${search ? `${base}search` : base}${query({ p: page, page_size: PAGE_SIZE, keyword: search })}`), [page, search]);
  const find = (keyword: string) => {
    setPage(0);
    setSearch(keyword.trim());
  };
  return { list, page, setPage, search, find, ...useListChanges(list) };
}

/** A search box: a keyword field and its button. */
export function SearchForm(props: { label: string; onSearch: (keyword: string) => void }) {
  const [keyword, setKeyword] = useState('');
  return (
    <form
      class="toolbar"
      onSubmit={(e) => {
        e.preventDefault();
        props.onSearch(keyword);
      }}
    >
      <InputField label={props.label} type="search" name="keyword" value={keyword} onValue={setKeyword} />
      <button type="submit">{t('common.search')}</button>
    </form>
  );
}

type SearchListProps<T> = TableProps<T> & { state: SearchList<T>; searchLabel: string; none?: ComponentChildren };

/**
 * A searchable list's body: the search box, what failed (loading, or a change to a row), the rows (or `none`
 * when there are none at all, "No matches" when a search found none) and the pager.
 */
export function SearchListView<T>(props: SearchListProps<T>) {
  const { list, page, setPage, search, find, action } = props.state;
  return (
    <>
      <SearchForm label={props.searchLabel} onSearch={find} />
      <ErrorNote error={list.error} onRetry={list.reload} />
      <ErrorNote error={action.error} />
      <LoadedTable {...props} loading={list.loading} rows={list.data?.rows} empty={search || !props.none ? t('common.noMatches') : props.none} />
      {list.data && <Pager page={page} pageSize={PAGE_SIZE} total={list.data.total} onPage={setPage} />}
    </>
  );
}

/** A page of things people make and manage (users, channels, codes, keys): a "New …" button, an intro, the list, and its dialogs (`children`). */
export function SearchListPage<T>(
  props: SearchListProps<T> & { title: string; intro?: string; createLabel: string; onCreate: () => void; children: ComponentChildren },
) {
  return (
    <Page
      title={props.title}
      actions={
        <button type="button" class="primary" onClick={props.onCreate}>
          {props.createLabel}
        </button>
      }
    >
      {props.intro && <p class="muted">{props.intro}</p>}
      <SearchListView {...props} />
      {props.children}
    </Page>
  );
}
