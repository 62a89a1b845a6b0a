// Languages (English and Simplified Chinese): the current one, remembered in localStorage, and t() to translate.
import { en, type MessageKey } from './messages/en';
import { zhCN } from './messages/zh-cn';
import { createStore, useStore } from './store';

export type Lang = 'en' | 'zh-CN';
export type { MessageKey };
export const LANGS: { id: Lang; label: string }[] = [
  { id: 'en', label: 'English' },
  { id: 'zh-CN', label: '中文' },
];

const DICTS: Record<Lang, Record<MessageKey, string>> = { en, 'zh-CN': zhCN };
const STORAGE_KEY = 'switchyard.lang';

function initialLang(): Lang {
  try {
    const saved = localStorage.getItem(STORAGE_KEY);
    if (saved === 'en' || saved === 'zh-CN') return saved;
  } catch {
    // storage unavailable (private mode): fall back to the browser's languages
  }
  return navigator.languages?.some((l) => l.toLowerCase().startsWith('zh')) ? 'zh-CN' : 'en';
}

export const langStore = createStore<Lang>(initialLang());
document.documentElement.lang = langStore.get();

export function setLang(lang: Lang): void {
  langStore.set(lang);
  document.documentElement.lang = lang;
  try {
    localStorage.setItem(STORAGE_KEY, lang);
  } catch {
    // not remembered, still switched
  }
}

export const useLang = (): Lang => useStore(langStore);

/** The message in the current language; `{name}` placeholders take `vars`. */
export function t(key: MessageKey, vars?: Record<string, string | number>): string {
  const text = DICTS[langStore.get()][key] ?? en[key];
  if (!vars) return text;
  return text.replace(/\{(\w+)\}/g, (m, name: string) => (name in vars ? String(vars[name]) : m));
}
