// Shared pieces of every page: headings, errors, dialogs, confirmations, toasts, copy buttons, pagers, loading,
// facts, the language picker.
import { type ComponentChildren, cloneElement, isValidElement, type VNode } from 'preact';
import { useCallback, useEffect, useId, useRef, useState } from 'preact/hooks';
import { describeError } from './api';
import { LANGS, type Lang, setLang, t, useLang } from './i18n';
import { focusOnNextPage } from './router';
import { createStore, useStore } from './store';

export function Page(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${props.title} · Switchyard`;
    if (focusOnNextPage.pending) {
      focusOnNextPage.pending = false;
      heading.current?.focus();
    }
  }, [props.title]);
  return (
    <section class="page">
      <header class="page-head">
        <h1 ref={heading} tabIndex={-1}>
          {props.title}
        </h1>
        {props.actions && <div class="page-actions">{props.actions}</div>}
      </header>
      {props.children}
    </section>
  );
}

export function ErrorNote(props: { error: unknown; onRetry?: () => void }) {
  if (!props.error) return null;
  const { headline, detail } = describeError(props.error);
  return (
    <div class="note error" role="alert">
      <strong>{headline}</strong>
      {detail && <span> {detail}</span>}
      {props.onRetry && (
        <button type="button" class="link" onClick={props.onRetry}>
          {t('common.retry')}
        </button>
      )}
    </div>
  );
}

export function Loading(props: { label?: string }) {
  return (
    <p class="loading" role="status">
      <span class="spinner" aria-hidden="true" />
      {props.label ?? t('common.loading')}
    </p>
  );
}

export function Empty(props: { children: ComponentChildren }) {
  return <p class="empty">{props.children}</p>;
}

export type Tone = 'ok' | 'warn' | 'bad' | 'muted' | 'info';
export function Badge(props: { tone: Tone; children: ComponentChildren; title?: string }) {
  return (
    <span class={`badge ${props.tone}`} title={props.title}>
      {props.children}
    </span>
  );
}

/** A status as a badge: its tone and its words. */
export function StatusBadge(props: { tone: Tone; label: string }) {
  return <Badge tone={props.tone}>{props.label}</Badge>;
}

export function Field(props: { label: string; hint?: string; children: ComponentChildren; class?: string }) {
  const id = useId();
  const hintId = `${id}-hint`;
  // The label names the control (for/id), the hint describes it (aria-describedby) without becoming part of its name.
  const child = isValidElement(props.children) ? (props.children as VNode<Record<string, unknown>>) : null;
  const controlId = (child?.props.id as string | undefined) ?? id;
  const control = child ? cloneElement(child, { id: controlId, ...(props.hint ? { 'aria-describedby': hintId } : {}) }) : props.children;
  return (
    <div class={`field ${props.class ?? ''}`}>
      <label class="field-label" for={controlId}>
        {props.label}
      </label>
      {control}
      {props.hint && (
        <small class="hint" id={hintId}>
          {props.hint}
        </small>
      )}
    </div>
  );
}

/** A modal <dialog>: focus stays inside, Escape closes it, focus returns to where it was. */
export function Dialog(props: { open: boolean; title: string; onClose: () => void; children: ComponentChildren; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null);
  const opener = useRef<Element | null>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (props.open && !d.open) {
      opener.current = document.activeElement;
      d.showModal();
    } else if (!props.open && d.open) {
      d.close();
      (opener.current as HTMLElement | null)?.focus?.();
    }
  }, [props.open]);
  return (
    <dialog
      ref={ref}
      class={props.wide ? 'wide' : ''}
      aria-labelledby="dialog-title"
      onCancel={(e) => {
        e.preventDefault();
        props.onClose();
      }}
    >
      {props.open && (
        <>
          <header class="dialog-head">
            <h2 id="dialog-title">{props.title}</h2>
            <button type="button" class="icon" aria-label={t('common.close')} onClick={props.onClose}>
              ×
            </button>
          </header>
          {props.children}
        </>
      )}
    </dialog>
  );
}

/** A Dialog open while `value` is set (not null, undefined or false), its title and content made from that value. */
export function DialogFor<T>(props: {
  value: T | null | undefined | false;
  title: (value: T) => string;
  onClose: () => void;
  children: (value: T) => ComponentChildren;
  wide?: boolean;
}) {
  const { value } = props;
  const open = value !== null && value !== undefined && value !== false;
  return (
    <Dialog open={open} title={open ? props.title(value) : ''} onClose={props.onClose} wide={props.wide}>
      {open && props.children(value)}
    </Dialog>
  );
}

// ---- confirmations ---------------------------------------------------------------------------

interface ConfirmRequest {
  title: string;
  message: string;
  confirmLabel: string;
  danger: boolean;
  resolve: (ok: boolean) => void;
}
const confirmStore = createStore<ConfirmRequest | null>(null);

export interface ConfirmOptions {
  title: string;
  message: string;
  confirmLabel?: string;
  danger?: boolean;
}

/** Asks before something that cannot be undone; resolves true when confirmed. */
export function confirmAction(opts: ConfirmOptions): Promise<boolean> {
  return new Promise((resolve) =>
    confirmStore.set({
      title: opts.title,
      message: opts.message,
      confirmLabel: opts.confirmLabel ?? t('common.confirm'),
      danger: opts.danger ?? true,
      resolve,
    }),
  );
}

export function ConfirmHost() {
  const req = useStore(confirmStore);
  const done = (ok: boolean) => {
    req?.resolve(ok);
    confirmStore.set(null);
  };
  return (
    <Dialog open={!!req} title={req?.title ?? ''} onClose={() => done(false)}>
      <p>{req?.message}</p>
      <div class="form-actions">
        <button type="button" onClick={() => done(false)}>
          {t('common.cancel')}
        </button>
        <button type="button" class={req?.danger ? 'danger' : 'primary'} onClick={() => done(true)}>
          {req?.confirmLabel}
        </button>
      </div>
    </Dialog>
  );
}

/** The question before a delete: its button says "Delete". */
export const askDelete = (title: string, message: string): ConfirmOptions => ({ title, message, confirmLabel: t('common.delete') });

// ---- toasts ----------------------------------------------------------------------------------

interface Toast {
  id: number;
  text: string;
  kind: 'ok' | 'error';
}
const toastStore = createStore<Toast[]>([]);
let toastSeq = 0;

export function toast(text: string, kind: 'ok' | 'error' = 'ok'): void {
  const id = ++toastSeq;
  toastStore.update((list) => [...list, { id, text, kind }]);
  setTimeout(() => toastStore.update((list) => list.filter((x) => x.id !== id)), kind === 'error' ? 8000 : 4000);
}

export function Toasts() {
  const list = useStore(toastStore);
  return (
    <div class="toasts" aria-live="polite">
      {list.map((x) => (
        <div key={x.id} class={`toast ${x.kind}`} role={x.kind === 'error' ? 'alert' : 'status'}>
          {x.text}
        </div>
      ))}
    </div>
  );
}

// ---- copy ------------------------------------------------------------------------------------

async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // Not a secure context, or no permission: the old way, through a selected text area.
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.appendChild(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand('copy');
    } catch {
      ok = false;
    }
    area.remove();
    return ok;
  }
}

export function CopyButton(props: { text: string; label?: string; class?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  useEffect(() => {
    if (state === 'idle') return;
    const timer = setTimeout(() => setState('idle'), 2500);
    return () => clearTimeout(timer);
  }, [state]);
  return (
    <button type="button" class={props.class ?? ''} onClick={async () => setState((await copyText(props.text)) ? 'copied' : 'failed')}>
      {state === 'copied' ? t('common.copied') : state === 'failed' ? t('common.copyFailed') : (props.label ?? t('common.copy'))}
    </button>
  );
}

// ---- paging ----------------------------------------------------------------------------------

export function Pager(props: { page: number; pageSize: number; total: number; onPage: (p: number) => void; capped?: boolean }) {
  const pages = Math.max(1, Math.ceil(props.total / props.pageSize));
  if (props.total <= props.pageSize && props.page === 0) return null;
  return (
    <nav class="pager" aria-label={t('common.pages')}>
      <button type="button" disabled={props.page <= 0} onClick={() => props.onPage(props.page - 1)}>
        {t('common.previous')}
      </button>
      <span>{t('common.pageOf', { page: props.page + 1, pages: props.capped ? `${pages}+` : pages })}</span>
      <button type="button" disabled={props.page + 1 >= pages} onClick={() => props.onPage(props.page + 1)}>
        {t('common.next')}
      </button>
    </nav>
  );
}

// ---- data loading ----------------------------------------------------------------------------

export interface Async<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `deps` change (the latest answer wins) and on reload(). */
export function useAsync<T>(load: () => Promise<T>, deps: unknown[]): Async<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const [tick, setTick] = useState(0);
  const seq = useRef(0);
  useEffect(() => {
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => mine === seq.current && setState({ data, error: undefined, loading: false }),
      (error) => mine === seq.current && setState((s) => ({ data: s.data, error, loading: false })),
    );
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { ...state, reload };
}

export interface Action {
  busy: boolean;
  error: unknown;
  run: <T>(fn: () => Promise<T>) => Promise<T | undefined>;
  /** Asks first (confirmAction), and runs `fn` only when confirmed. */
  runIfConfirmed: (ask: ConfirmOptions, fn: () => Promise<unknown>) => Promise<void>;
  clear: () => void;
}

/** Wraps an action: `busy` while it runs, its failure in `error`. */
export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const run = useCallback(async <T,>(fn: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(undefined);
    try {
      return await fn();
    } catch (err) {
      setError(err);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  const runIfConfirmed = useCallback(
    async (ask: ConfirmOptions, fn: () => Promise<unknown>) => {
      if (await confirmAction(ask)) await run(fn);
    },
    [run],
  );
  return { busy, error, run, runIfConfirmed, clear: useCallback(() => setError(undefined), []) };
}

// ---- facts -----------------------------------------------------------------------------------

export interface Fact {
  label: string;
  value: ComponentChildren;
  /** The value's tooltip. */
  title?: string;
}

/** Labelled values, one under the other (or side by side with class "facts inline"). */
export function Facts(props: { facts: (Fact | false | null | undefined)[]; class?: string }) {
  return (
    <dl class={props.class ?? 'facts'}>
      {props.facts.map(
        (f) =>
          f && (
            <div key={f.label}>
              <dt>{f.label}</dt>
              <dd title={f.title}>{f.value}</dd>
            </div>
          ),
      )}
    </dl>
  );
}

// ---- preferences -----------------------------------------------------------------------------

/** The language menu (header and sign-in page); its label is for screen readers only. */
export function LanguageSelect(props: { class?: string }) {
  const lang = useLang();
  return (
    <label class={props.class}>
      <span class="sr-only">{t('nav.language')}</span>
      <select value={lang} onChange={(e) => setLang(e.currentTarget.value as Lang)} data-testid="lang">
        {LANGS.map((l) => (
          <option key={l.id} value={l.id}>
            {l.label}
          </option>
        ))}
      </select>
    </label>
  );
}
