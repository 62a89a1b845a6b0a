// Numbers, dates and durations in the current language.
import { langStore, t } from './i18n';

export const fmtNumber = (n: number, digits?: number): string =>
  new Intl.NumberFormat(langStore.get(), digits === undefined ? undefined : { maximumFractionDigits: digits, minimumFractionDigits: digits }).format(n);

/** Unix seconds or an ISO string; '' for nothing. */
export function fmtDate(v: number | string | null | undefined, withTime = true): string {
  if (v === null || v === undefined || v === '' || v === 0 || v === -1) return '';
  const d = typeof v === 'number' ? new Date(v * 1000) : new Date(v);
  if (Number.isNaN(d.getTime())) return '';
  return new Intl.DateTimeFormat(langStore.get(), withTime ? { dateStyle: 'medium', timeStyle: 'short' } : { dateStyle: 'medium' }).format(d);
}

/** A duration in its two largest units, in the current language ("10m 19s", "10 分 19 秒"). */
export function fmtDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d) return t('duration.dh', { d, h });
  if (h) return t('duration.hm', { h, m });
  if (m) return t('duration.ms', { m, s: s % 60 });
  return t('duration.s', { s });
}

/** A datetime-local input's value for Unix seconds (local time), and back. */
export function toLocalInput(seconds: number): string {
  const d = new Date(seconds * 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
export function fromLocalInput(v: string): number | undefined {
  if (!v) return undefined;
  const ms = new Date(v).getTime();
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
}
