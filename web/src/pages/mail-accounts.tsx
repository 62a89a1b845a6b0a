// Mail accounts: add (password or Microsoft OAuth2), import many lines at once, delete, and each one's last error.
import { useState } from 'preact/hooks';
import { call, del, post } from '../api';
import { fmtDate } from '../format';
import { t } from '../i18n';
import { onLinkClick } from '../router';
import type { MailAccount } from '../types';
import { Badge, confirmAction, Dialog, Empty, ErrorNote, Field, Loading, Page, toast, useAction, useAsync } from '../ui';

const mailHref = (email: string) => `/mail/${encodeURIComponent(email)}`;

export default function MailAccountsPage() {
  const accounts = useAsync(async () => (await call<MailAccount[]>('GET', '/api/mail/accounts')).data, []);
  const [adding, setAdding] = useState(false);
  const [importing, setImporting] = useState(false);
  const action = useAction();
  const remove = async (a: MailAccount) => {
    if (!(await confirmAction({ title: t('mail.deleteTitle'), message: t('mail.deleteText', { email: a.email }), confirmLabel: t('common.delete') }))) return;
    await action.run(async () => {
      await del(`/api/mail/accounts/${encodeURIComponent(a.email)}`);
      toast(t('mail.deleted', { email: a.email }));
      accounts.reload();
    });
  };
  return (
    <Page
      title={t('mail.title')}
      actions={
        <>
          <button type="button" onClick={() => setImporting(true)}>
            {t('mail.import')}
          </button>
          <button type="button" class="primary" onClick={() => setAdding(true)}>
            {t('mail.add')}
          </button>
        </>
      }
    >
      <p class="muted">{t('mail.intro')}</p>
      <ErrorNote error={accounts.error} onRetry={accounts.reload} />
      <ErrorNote error={action.error} />
      {accounts.loading && !accounts.data ? (
        <Loading />
      ) : accounts.data?.length === 0 ? (
        <Empty>{t('mail.none')}</Empty>
      ) : (
        <div class="table-wrap">
          <table data-testid="mail-accounts">
            <thead>
              <tr>
                <th scope="col">{t('mail.email')}</th>
                <th scope="col">{t('mail.auth')}</th>
                <th scope="col">IMAP</th>
                <th scope="col">{t('mail.lastUsed')}</th>
                <th scope="col">{t('mail.lastError')}</th>
                <th scope="col">
                  <span class="sr-only">{t('common.actions')}</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {accounts.data?.map((a) => (
                <tr key={a.id}>
                  <td>
                    <a href={mailHref(a.email)} onClick={(e) => onLinkClick(e, mailHref(a.email))}>
                      {a.email}
                    </a>
                  </td>
                  <td>
                    <Badge tone="info">{a.auth_type === 'oauth2' ? 'OAuth2' : t('mail.password')}</Badge>
                  </td>
                  <td>
                    <code>
                      {a.imap.host}:{a.imap.port}
                    </code>
                  </td>
                  <td>{fmtDate(a.last_used_at) || '—'}</td>
                  <td>{a.last_error ? <span class="text-bad">{a.last_error}</span> : <span class="muted">{t('mail.noError')}</span>}</td>
                  <td class="row-actions">
                    <a class="button" href={mailHref(a.email)} onClick={(e) => onLinkClick(e, mailHref(a.email))}>
                      {t('mail.open')}
                    </a>
                    <button type="button" class="danger" onClick={() => void remove(a)}>
                      {t('common.delete')}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Dialog open={adding} title={t('mail.add')} onClose={() => setAdding(false)} wide>
        {adding && (
          <AccountForm
            onDone={(a) => {
              setAdding(false);
              toast(t('mail.added', { email: a.email }));
              accounts.reload();
            }}
            onCancel={() => setAdding(false)}
          />
        )}
      </Dialog>
      <Dialog open={importing} title={t('mail.import')} onClose={() => setImporting(false)} wide>
        {importing && <ImportForm onDone={() => accounts.reload()} onCancel={() => setImporting(false)} />}
      </Dialog>
    </Page>
  );
}

interface ServerDraft {
  host: string;
  port: string;
  secure: boolean;
}

function ServerFields(props: { legend: string; prefix: string; value: ServerDraft; onChange: (v: ServerDraft) => void }) {
  const v = props.value;
  return (
    <fieldset class="inline-form">
      <legend>{props.legend}</legend>
      <Field label={t('mail.host')} class="grow">
        <input name={`${props.prefix}-host`} value={v.host} onInput={(e) => props.onChange({ ...v, host: e.currentTarget.value })} />
      </Field>
      <Field label={t('mail.port')}>
        <input
          name={`${props.prefix}-port`}
          type="number"
          min={1}
          max={65535}
          value={v.port}
          onInput={(e) => props.onChange({ ...v, port: e.currentTarget.value })}
        />
      </Field>
      <label class="check">
        <input name={`${props.prefix}-secure`} type="checkbox" checked={v.secure} onChange={(e) => props.onChange({ ...v, secure: e.currentTarget.checked })} />
        TLS
      </label>
    </fieldset>
  );
}

const serverBody = (s: ServerDraft) => ({ host: s.host.trim(), port: Number(s.port), secure: s.secure });

function AccountForm(props: { onDone: (a: MailAccount) => void; onCancel: () => void }) {
  const [kind, setKind] = useState<'password' | 'oauth2'>('password');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [clientId, setClientId] = useState('');
  const [refreshToken, setRefreshToken] = useState('');
  const [custom, setCustom] = useState(false);
  const [imap, setImap] = useState<ServerDraft>({ host: 'outlook.office365.com', port: '993', secure: true });
  const [smtp, setSmtp] = useState<ServerDraft>({ host: 'smtp.office365.com', port: '587', secure: false });
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const auth = kind === 'password' ? { type: 'password', password } : { type: 'oauth2', client_id: clientId.trim(), refresh_token: refreshToken.trim() };
      const body = { email: email.trim(), auth, ...(custom ? { imap: serverBody(imap), smtp: serverBody(smtp) } : {}) };
      props.onDone(await post<MailAccount>('/api/mail/accounts', body));
    });
  };
  return (
    <form class="form" onSubmit={submit}>
      <ErrorNote error={action.error} />
      <Field label={t('mail.email')}>
        <input name="email" type="email" required autocomplete="off" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
      </Field>
      <fieldset class="segmented">
        <legend>{t('mail.auth')}</legend>
        <label>
          <input type="radio" name="kind" value="password" checked={kind === 'password'} onChange={() => setKind('password')} />
          {t('mail.password')}
        </label>
        <label>
          <input type="radio" name="kind" value="oauth2" checked={kind === 'oauth2'} onChange={() => setKind('oauth2')} />
          {t('mail.oauth')}
        </label>
      </fieldset>
      {kind === 'password' ? (
        <Field label={t('mail.password')}>
          <input name="password" type="password" required autocomplete="new-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </Field>
      ) : (
        <>
          <Field label="Client ID">
            <input name="client_id" required value={clientId} onInput={(e) => setClientId(e.currentTarget.value)} />
          </Field>
          <Field label="Refresh token">
            <textarea name="refresh_token" required rows={3} value={refreshToken} onInput={(e) => setRefreshToken(e.currentTarget.value)} />
          </Field>
        </>
      )}
      <label class="check">
        <input type="checkbox" name="custom-servers" checked={custom} onChange={(e) => setCustom(e.currentTarget.checked)} />
        {t('mail.customServers')}
      </label>
      {custom && (
        <>
          <ServerFields legend="IMAP" prefix="imap" value={imap} onChange={setImap} />
          <ServerFields legend="SMTP" prefix="smtp" value={smtp} onChange={setSmtp} />
        </>
      )}
      {!custom && <p class="hint">{t('mail.outlookDefault')}</p>}
      <div class="form-actions">
        <button type="button" onClick={props.onCancel}>
          {t('common.cancel')}
        </button>
        <button type="submit" class="primary" disabled={action.busy}>
          {t('mail.add')}
        </button>
      </div>
    </form>
  );
}

interface ImportResult {
  imported: number;
  failed: number;
  results: { line: number; email?: string; ok: boolean; created?: boolean; auth_type?: string; error?: string }[];
}

function ImportForm(props: { onDone: () => void; onCancel: () => void }) {
  const [lines, setLines] = useState('');
  const [result, setResult] = useState<ImportResult | null>(null);
  const action = useAction();
  return (
    <form
      class="form"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => {
          setResult(await post<ImportResult>('/api/mail/accounts/import', undefined, { text: lines }));
          props.onDone();
        });
      }}
    >
      <p class="hint">{t('mail.importHint')}</p>
      <Field label={t('mail.importLines')}>
        <textarea
          name="lines"
          rows={8}
          required
          spellcheck={false}
          placeholder="someone@outlook.com----password----client_id----refresh_token"
          value={lines}
          onInput={(e) => setLines(e.currentTarget.value)}
        />
      </Field>
      <ErrorNote error={action.error} />
      {result && (
        <div role="status">
          <p>
            <strong>{t('mail.importSummary', { ok: result.imported, failed: result.failed })}</strong>
          </p>
          <ul class="plain">
            {result.results.map((r) => (
              <li key={r.line} class={r.ok ? '' : 'text-bad'}>
                {t('mail.importLine', { n: r.line })} {r.email ?? ''} — {r.ok ? (r.created ? t('mail.importCreated') : t('mail.importUpdated')) : r.error}
              </li>
            ))}
          </ul>
        </div>
      )}
      <div class="form-actions">
        <button type="button" onClick={props.onCancel}>
          {result ? t('common.done') : t('common.cancel')}
        </button>
        <button type="submit" class="primary" disabled={action.busy || !lines.trim()}>
          {t('mail.importButton')}
        </button>
      </div>
    </form>
  );
}
