// Light and dark themes: the system's choice until people pick one, then theirs (remembered).
import { loadChoice, saveChoice } from './saved';
import { createStore, useStore } from './store';

export type Theme = 'light' | 'dark';
const STORAGE_KEY = 'switchyard.theme';

function initialTheme(): Theme {
  return loadChoice<Theme>(STORAGE_KEY, ['light', 'dark']) ?? (window.matchMedia?.('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
}

export const themeStore = createStore<Theme>(initialTheme());
const apply = (theme: Theme) => {
  document.documentElement.dataset.theme = theme;
};
apply(themeStore.get());

export function setTheme(theme: Theme): void {
  themeStore.set(theme);
  apply(theme);
  saveChoice(STORAGE_KEY, theme);
}

export const toggleTheme = (): void => setTheme(themeStore.get() === 'dark' ? 'light' : 'dark');

export const useTheme = (): Theme => useStore(themeStore);
