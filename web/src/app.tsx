// The shell: sign-in gate, header (navigation, language, theme, account), the current page, dialogs and toasts.
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { t, useLang } from './i18n';
import { LoginPage } from './pages/login';
import { matchPath, navigate, onLinkClick, useLocation } from './router';
import { ROUTES, type RouteDef } from './routes';
import { isAdmin, loadSelf, signOut, useSession } from './session';
import { toggleTheme, useTheme } from './theme';
import type { PageProps } from './types';
import { ConfirmHost, ErrorNote, LanguageSelect, Loading, Page, Toasts } from './ui';

export function App() {
  useLang();
  useTheme();
  const { user, expired } = useSession();
  const loc = useLocation();

  useEffect(() => {
    void loadSelf();
  }, []);

  // Signed out: the sign-in page, remembering where people were going; signed in: never the sign-in page.
  const onLogin = loc.path === '/login';
  useEffect(() => {
    if (user === null && !onLogin) navigate(`/login?next=${encodeURIComponent(loc.path + loc.search)}`, { replace: true });
    if (user && onLogin) {
      const next = new URLSearchParams(loc.search).get('next');
      navigate(next?.startsWith('/') && !next.startsWith('//') ? next : '/', { replace: true });
    }
  }, [user, onLogin, loc.path, loc.search]);

  if (user === undefined) return <Loading />;
  if (user === null || onLogin) {
    return (
      <>
        <LoginPage expired={expired} />
        <Toasts />
      </>
    );
  }

  let found: { route: RouteDef; params: Record<string, string> } | undefined;
  for (const route of ROUTES) {
    const params = matchPath(route.path, loc.path);
    if (params) {
      found = { route, params };
      break;
    }
  }

  return (
    <>
      <a class="skip" href="#main">
        {t('nav.skip')}
      </a>
      <Header />
      <main id="main" tabIndex={-1}>
        {!found ? (
          <Page title={t('notFound.title')}>
            <p>{t('notFound.text')}</p>
          </Page>
        ) : user.role < found.route.minRole ? (
          <Page title={t('forbidden.title')}>
            <p>{t('forbidden.text')}</p>
          </Page>
        ) : (
          <RouteView key={loc.path} route={found.route} params={found.params} />
        )}
      </main>
      <ConfirmHost />
      <Toasts />
    </>
  );
}

function RouteView(props: { route: RouteDef; params: Record<string, string> }) {
  const [loaded, setLoaded] = useState<{ route: RouteDef; Component: ComponentType<PageProps> } | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    let live = true;
    props.route.load().then(
      (m) => live && setLoaded({ route: props.route, Component: m.default }),
      (err) => live && setError(err),
    );
    return () => {
      live = false;
    };
  }, [props.route]);
  if (error) return <ErrorNote error={new Error(t('error.pageLoad'))} onRetry={() => window.location.reload()} />;
  if (!loaded || loaded.route !== props.route) return <Loading />;
  return <loaded.Component params={props.params} />;
}

function NavLink(props: { href: string; label: string; current: boolean; onNavigate: () => void }) {
  return (
    <a
      href={props.href}
      aria-current={props.current ? 'page' : undefined}
      onClick={(e) => {
        props.onNavigate();
        onLinkClick(e, props.href);
      }}
    >
      {props.label}
    </a>
  );
}

function Header() {
  const { user } = useSession();
  const theme = useTheme();
  const loc = useLocation();
  const [menuOpen, setMenuOpen] = useState(false);
  const close = () => setMenuOpen(false);
  const isCurrent = (path: string) => (path === '/' ? loc.path === '/' : loc.path === path || loc.path.startsWith(`${path}/`));
  const links = (group: 'main' | 'admin') =>
    ROUTES.filter((r) => r.nav?.group === group && (user?.role ?? 0) >= r.minRole).map((r) => (
      <li key={r.path}>
        <NavLink href={r.path} label={t(r.nav!.label)} current={isCurrent(r.path)} onNavigate={close} />
      </li>
    ));
  return (
    <header class="top">
      <div class="top-bar">
        <a class="brand" href="/" onClick={(e) => onLinkClick(e, '/')}>
          <img src="/favicon.svg" alt="" width="24" height="24" />
          Switchyard
        </a>
        <button type="button" class="menu-toggle" aria-expanded={menuOpen} aria-controls="site-nav" onClick={() => setMenuOpen(!menuOpen)}>
          {t('nav.menu')}
        </button>
        <div class="top-tools">
          <LanguageSelect class="lang-pick" />
          <button type="button" class="theme-toggle" aria-pressed={theme === 'dark'} title={t('nav.darkTheme')} onClick={toggleTheme}>
            <span aria-hidden="true">{theme === 'dark' ? '☾' : '☀'}</span>
            <span class="sr-only">{t('nav.darkTheme')}</span>
          </button>
          <a class="who" href="/account" onClick={(e) => onLinkClick(e, '/account')} aria-current={loc.path === '/account' ? 'page' : undefined}>
            {user?.display_name || user?.username}
          </a>
          <button type="button" onClick={() => void signOut()}>
            {t('nav.signOut')}
          </button>
        </div>
      </div>
      <nav id="site-nav" class={menuOpen ? 'open' : ''} aria-label={t('nav.label')}>
        <ul>{links('main')}</ul>
        {isAdmin(user) && (
          <ul class="admin-nav" aria-label={t('nav.admin')}>
            <li class="group-label" aria-hidden="true">
              {t('nav.admin')}
            </li>
            {links('admin')}
            <li>
              <a href="/admin/queues">{t('nav.queues')}</a>
            </li>
          </ul>
        )}
      </nav>
    </header>
  );
}
