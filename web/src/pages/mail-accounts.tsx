// Mail accounts: add (password or Microsoft OAuth2), import many lines at once, delete, and each one's last error.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { call, del, post } from '../api';
import { LoadedTable, RowButtons } from '../data-table';
import { ActionForm, CheckField, InputField, TextAreaField } from '../form';
import { fmtDate } from '../format';
import { t } from '../i18n';
import { useListChanges } from '../paged-list';
import { onLinkClick } from '../router';
import type { MailAccount } from '../types';
import { askDelete, Badge, DialogFor, ErrorNote, Page, toast, useAction, useAsync } from '../ui';

/** A link to one account's page. */
function MailLink(props: { email: string; class?: string; children: ComponentChildren }) {
  const href = `/mail/${encodeURIComponent(props.email)}`;
  return (
    <a class={props.class} href={href} onClick={(e) => onLinkClick(e, href)}>
      {props.children}
    </a>
  );
}

export default function MailAccountsPage() {
  const accounts = useAsync(async () => (await call<MailAccount[]>('GET', '/api/mail/accounts')).data, []);
  const [adding, setAdding] = useState(false);
  const [importing, setImporting] = useState(false);
  const { action, changeIfConfirmed } = useListChanges(accounts);
  const remove = (a: MailAccount) =>
    changeIfConfirmed(askDelete(t('mail.deleteTitle'), t('mail.deleteText', { email: a.email })), async () => {
      await del(`/api/mail/accounts/${encodeURIComponent(a.email)}`);
      toast(t('mail.deleted', { email: a.email }));
    });
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
      <LoadedTable
        loading={accounts.loading}
        rows={accounts.data}
        empty={t('mail.none')}
        testId="mail-accounts"
        rowKey={(a) => a.id}
        columns={[
          { head: t('mail.email'), cell: (a) => <MailLink email={a.email}>{a.email}</MailLink> },
          { head: t('mail.auth'), cell: (a) => <Badge tone="info">{a.auth_type === 'oauth2' ? 'OAuth2' : t('mail.password')}</Badge> },
          {
            head: 'IMAP',
            cell: (a) => (
              <code>
                {a.imap.host}:{a.imap.port}
              </code>
            ),
          },
          { head: t('mail.lastUsed'), cell: (a) => fmtDate(a.last_used_at) || '—' },
          {
            head: t('mail.lastError'),
            cell: (a) => (a.last_error ? <span class="text-bad">{a.last_error}</span> : <span class="muted">{t('mail.noError')}</span>),
          },
        ]}
        actions={(a) => (
          <RowButtons onDelete={() => void remove(a)}>
            <MailLink email={a.email} class="button">
              {t('mail.open')}
            </MailLink>
          </RowButtons>
        )}
      />
      <DialogFor value={adding} title={() => t('mail.add')} onClose={() => setAdding(false)} wide>
        {() => (
          <AccountForm
            onDone={(a) => {
              setAdding(false);
              toast(t('mail.added', { email: a.email }));
              accounts.reload();
            }}
            onCancel={() => setAdding(false)}
          />
        )}
      </DialogFor>
      <DialogFor value={importing} title={() => t('mail.import')} onClose={() => setImporting(false)} wide>
        {() => <ImportForm onDone={() => accounts.reload()} onCancel={() => setImporting(false)} />}
      </DialogFor>
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
      <InputField label={t('mail.host')} fieldClass="grow" name={`${props.prefix}-host`} value={v.host} onValue={(host) => props.onChange({ ...v, host })} />
      <InputField
        label={t('mail.port')}
        name={`${props.prefix}-port`}
        type="number"
        min={1}
        max={65535}
        value={v.port}
        onValue={(port) => props.onChange({ ...v, port })}
      />
      <CheckField name={`${props.prefix}-secure`} checked={v.secure} onChecked={(secure) => props.onChange({ ...v, secure })}>
        TLS
      </CheckField>
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
  const submit = async () => {
    const auth = kind === 'password' ? { type: 'password', password } : { type: 'oauth2', client_id: clientId.trim(), refresh_token: refreshToken.trim() };
    const body = { email: email.trim(), auth, ...(custom ? { imap: serverBody(imap), smtp: serverBody(smtp) } : {}) };
    props.onDone(await post<MailAccount>('/api/mail/accounts', body));
  };
  return (
    <ActionForm action={action} onSubmit={submit} onCancel={props.onCancel} submitLabel={t('mail.add')}>
      <InputField label={t('mail.email')} name="email" type="email" required autocomplete="off" value={email} onValue={setEmail} />
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
        <InputField label={t('mail.password')} name="password" type="password" required autocomplete="new-password" value={password} onValue={setPassword} />
      ) : (
        <>
          <InputField label="Client ID" name="client_id" required value={clientId} onValue={setClientId} />
          <TextAreaField label="Refresh token" name="refresh_token" required rows={3} value={refreshToken} onValue={setRefreshToken} />
        </>
      )}
      <CheckField name="custom-servers" checked={custom} onChecked={setCustom}>
        {t('mail.customServers')}
      </CheckField>
      {custom && (
        <>
          <ServerFields legend="IMAP" prefix="imap" value={imap} onChange={setImap} />
          <ServerFields legend="SMTP" prefix="smtp" value={smtp} onChange={setSmtp} />
        </>
      )}
      {!custom && <p class="hint">{t('mail.outlookDefault')}</p>}
    </ActionForm>
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
    <ActionForm
      action={action}
      onSubmit={async () => {
        setResult(await post<ImportResult>('/api/mail/accounts/import', undefined, { text: lines }));
        props.onDone();
      }}
      blocked={!lines.trim()}
      onCancel={props.onCancel}
      cancelLabel={result ? t('common.done') : t('common.cancel')}
      submitLabel={t('mail.importButton')}
      head={
        <>
          <p class="hint">{t('mail.importHint')}</p>
          <TextAreaField
            label={t('mail.importLines')}
            name="lines"
            rows={8}
            required
            spellcheck={false}
            placeholder="someone@outlook.com----password----client_id----refresh_token"
            value={lines}
            onValue={setLines}
          />
        </>
      }
    >
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
    </ActionForm>
  );
}
