// Every page of the console: its path, who may open it, its place in the navigation, and its code (loaded when first opened).
// src/http/console.ts (CONSOLE_ROUTE) serves index.html for exactly these paths.
import type { ComponentType } from 'preact';
import type { MessageKey } from './i18n';
import { type PageProps, ROLE } from './types';

export interface RouteDef {
  path: string;
  load: () => Promise<{ default: ComponentType<PageProps> }>;
  minRole: number;
  nav?: { label: MessageKey; group: 'main' | 'admin' };
}

export const ROUTES: RouteDef[] = [
  { path: '/', load: () => import('./pages/dashboard'), minRole: ROLE.common, nav: { label: 'nav.dashboard', group: 'main' } },
  { path: '/keys', load: () => import('./pages/keys'), minRole: ROLE.common, nav: { label: 'nav.keys', group: 'main' } },
  { path: '/playground', load: () => import('./pages/playground'), minRole: ROLE.common, nav: { label: 'nav.playground', group: 'main' } },
  { path: '/content', load: () => import('./pages/content-list'), minRole: ROLE.common, nav: { label: 'nav.content', group: 'main' } },
  { path: '/content/:id', load: () => import('./pages/content-item'), minRole: ROLE.common },
  { path: '/mail', load: () => import('./pages/mail-accounts'), minRole: ROLE.common, nav: { label: 'nav.mail', group: 'main' } },
  { path: '/mail/:email', load: () => import('./pages/mail-account'), minRole: ROLE.common },
  { path: '/jobs', load: () => import('./pages/jobs'), minRole: ROLE.common, nav: { label: 'nav.jobs', group: 'main' } },
  { path: '/schedules', load: () => import('./pages/schedules'), minRole: ROLE.common, nav: { label: 'nav.schedules', group: 'main' } },
  { path: '/batches', load: () => import('./pages/batches'), minRole: ROLE.common, nav: { label: 'nav.batches', group: 'main' } },
  { path: '/webhooks', load: () => import('./pages/webhooks'), minRole: ROLE.common, nav: { label: 'nav.webhooks', group: 'main' } },
  { path: '/logs', load: () => import('./pages/logs'), minRole: ROLE.common, nav: { label: 'nav.logs', group: 'main' } },
  { path: '/account', load: () => import('./pages/account'), minRole: ROLE.common },
  { path: '/admin/users', load: () => import('./pages/admin-users'), minRole: ROLE.admin, nav: { label: 'nav.users', group: 'admin' } },
  { path: '/admin/channels', load: () => import('./pages/admin-channels'), minRole: ROLE.admin, nav: { label: 'nav.channels', group: 'admin' } },
  { path: '/admin/redemptions', load: () => import('./pages/admin-redemptions'), minRole: ROLE.admin, nav: { label: 'nav.redemptions', group: 'admin' } },
  { path: '/admin/logs', load: () => import('./pages/logs'), minRole: ROLE.admin, nav: { label: 'nav.allLogs', group: 'admin' } },
];
