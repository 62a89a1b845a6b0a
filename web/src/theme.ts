// Light and dark themes: the system's choice until people pick one, then theirs (remembered).
import { createStore, useStore } from './store';

export type Theme = 'light' | 'dark';
const STORAGE_KEY = 'switchyard.theme';

function initialTheme(): Theme {
  try {
    const saved = localStorage.getItem(STORAGE_KEY);
    if (saved === 'light' || saved === 'dark') return saved;
  } catch {
    // storage unavailable
  }
  return window.matchMedia?.('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export const themeStore = createStore<Theme>(initialTheme());
const apply = (theme: Theme) => {
  document.documentElement.dataset.theme = theme;
};
apply(themeStore.get());

export function setTheme(theme: Theme): void {
  themeStore.set(theme);
  apply(theme);
  try {
    localStorage.setItem(STORAGE_KEY, theme);
  } catch {
    // not remembered, still applied
  }
}

export const useTheme = (): Theme => useStore(themeStore);
