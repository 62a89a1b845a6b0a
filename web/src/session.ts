// Who is signed in: read from /api/user/self, changed by sign-in and sign-out. Nothing secret is stored in the browser.
import { get, onSessionEnded, post } from './api';
import { forgetKeys } from './keys-memory';
import { createStore, useStore } from './store';
import { ROLE, type User } from './types';

export interface SessionState {
  /** undefined: not known yet (first load); null: nobody is signed in. */
  user: User | null | undefined;
  /** Set when the server ended the session under us (shown on the sign-in page). */
  expired: boolean;
}

export const sessionStore = createStore<SessionState>({ user: undefined, expired: false });
export const useSession = (): SessionState => useStore(sessionStore);
export const isAdmin = (u: User | null | undefined): boolean => !!u && u.role >= ROLE.admin;

onSessionEnded(() => {
  if (sessionStore.get().user) {
    forgetKeys();
    sessionStore.set({ user: null, expired: true });
  }
});

export async function loadSelf(): Promise<void> {
  try {
    const user = await get<User>('/api/user/self');
    sessionStore.set({ user, expired: false });
  } catch {
    sessionStore.set({ user: null, expired: false });
  }
}

export async function signIn(username: string, password: string): Promise<void> {
  const user = await post<User>('/api/user/login', { username, password });
  sessionStore.set({ user, expired: false });
}

export async function signOut(): Promise<void> {
  try {
    await get('/api/user/logout');
  } finally {
    forgetKeys();
    sessionStore.set({ user: null, expired: false });
  }
}

export function setUser(user: User): void {
  sessionStore.update((s) => ({ ...s, user }));
}
