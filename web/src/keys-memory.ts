// Whole API keys made in this tab: kept in memory only (never in storage), so the playground can use a key after it was shown once.
import { createStore, useStore } from './store';

export interface RememberedKey {
  id: number;
  name: string;
  key: string;
}

export const keysStore = createStore<RememberedKey[]>([]);
export const useRememberedKeys = (): RememberedKey[] => useStore(keysStore);

export function rememberKey(k: RememberedKey): void {
  keysStore.update((list) => [k, ...list.filter((x) => x.id !== k.id)]);
}

export function forgetKey(id: number): void {
  keysStore.update((list) => list.filter((x) => x.id !== id));
}

export function forgetKeys(): void {
  keysStore.set([]);
}

/** sk-AbCd…wxyz: enough to recognise a key without showing it. */
export const maskKey = (key: string): string => (key.length > 12 ? `${key.slice(0, 7)}…${key.slice(-4)}` : '…');
