// Languages (English and Simplified Chinese): the current one, remembered in localStorage, and t() to translate.
import { en, type MessageKey } from './messages/en';
import { zhCN } from './messages/zh-cn';
import { loadChoice, saveChoice } from './saved';
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
  // Nothing remembered (or storage unavailable): the browser's languages.
  const browser: Lang = navigator.languages?.some((l) => l.toLowerCase().startsWith('zh')) ? 'zh-CN' : 'en';
  return loadChoice(STORAGE_KEY, Object.keys(DICTS) as Lang[]) ?? browser;
}

export const langStore = createStore<Lang>(initialLang());
document.documentElement.lang = langStore.get();

export function setLang(lang: Lang): void {
  langStore.set(lang);
  document.documentElement.lang = lang;
  saveChoice(STORAGE_KEY, lang);
}

export const useLang = (): Lang => useStore(langStore);

/** The message in the current language; `{name}` placeholders take `vars`. */
export function t(key: MessageKey, vars?: Record<string, string | number>): string {
  const text = DICTS[langStore.get()][key] ?? en[key];
  if (!vars) return text;
  return text.replace(/\{(\w+)\}/g, (m, name: string) => (name in vars ? String(vars[name]) : m));
}
