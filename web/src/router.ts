// Client-side routing on the History API: the current location, navigate(), and matching of the routes table.
import { createStore, useStore } from './store';

export interface Loc {
  path: string;
  search: string;
}

const read = (): Loc => ({ path: window.location.pathname, search: window.location.search });
export const locationStore = createStore<Loc>(read());
/** Set by navigate(): the next page moves focus to its heading (keyboard and screen reader users land there). */
export const focusOnNextPage = { pending: false };

window.addEventListener('popstate', () => {
  focusOnNextPage.pending = true;
  locationStore.set(read());
});

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  const url = new URL(to, window.location.origin);
  if (opts.replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  focusOnNextPage.pending = !opts.replace;
  locationStore.set(read());
  if (!opts.replace) window.scrollTo(0, 0);
}

/** Replaces the query string without a new history entry (filters kept in the URL). */
export function setSearch(params: URLSearchParams): void {
  const s = params.toString();
  window.history.replaceState(null, '', `${window.location.pathname}${s ? `?${s}` : ''}`);
  locationStore.set(read());
}

export const useLocation = (): Loc => useStore(locationStore);

/** Matches `/mail/:email` against `/mail/a%40b.c`: the decoded params, or null. */
export function matchPath(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/').filter(Boolean);
  const s = path.replace(/\/+$/, '').split('/').filter(Boolean);
  if (p.length !== s.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    if (p[i]!.startsWith(':')) {
      try {
        params[p[i]!.slice(1)] = decodeURIComponent(s[i]!);
      } catch {
        return null;
      }
    } else if (p[i] !== s[i]) return null;
  }
  return params;
}

/** A plain click on an in-console link navigates without a reload; modified clicks keep the browser's behaviour. */
export function onLinkClick(e: MouseEvent, href: string): void {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(href);
}
