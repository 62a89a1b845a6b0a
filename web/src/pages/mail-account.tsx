// One mail account: latest and all mail (INBOX/Junk), a safe message view, get a verification code while it arrives, empty folders.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call, get } from '../api';
import { CheckField, InputField, SelectField } from '../form';
import { fmtDate } from '../format';
import { t } from '../i18n';
import { jobCall, type JobWatch, jobStateKey, watchJob } from '../job-events';
import { onLinkClick } from '../router';
import type { PageProps } from '../types';
import type { Accepted, CodeAnswer, JobState, MailAccount, MailMessage } from '../types';
import { Badge, CopyButton, Empty, ErrorNote, Facts, Loading, Page, toast, useAction, useAsync } from '../ui';

type Mailbox = 'INBOX' | 'Junk';

/**
 * A mail's HTML as a document for a sandboxed frame (no scripts, an opaque origin): its own policy
 * allows nothing remote — images only as data: URLs — on top of the console's, which it inherits.
 */
export function mailDocument(html: string): string {
  const csp = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:";
  return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${csp}"><style>body{font:14px/1.5 system-ui,sans-serif;margin:12px;color:#1f2328;background:#fff;overflow-wrap:anywhere}img{max-width:100%;height:auto}</style></head><body>${html}</body></html>`;
}

export default function MailAccountPage(props: PageProps) {
  const email = props.params.email!;
  const account = useAsync(async () => (await get<MailAccount[]>('/api/mail/accounts')).find((a) => a.email === email.toLowerCase()) ?? null, [email]);
  return (
    <Page
      title={email}
      actions={
        <a class="button" href="/mail" onClick={(e) => onLinkClick(e, '/mail')}>
          {t('mail.back')}
        </a>
      }
    >
      <ErrorNote error={account.error} />
      {account.data === null && <p class="note warn">{t('mail.unknownAccount')}</p>}
      {account.data?.last_error && (
        <p class="note error" data-testid="last-error">
          <strong>{t('mail.lastError')}:</strong> {account.data.last_error}
        </p>
      )}
      <div class="grid-2">
        <CodeCard email={email} />
        <CleanCard email={email} onDone={account.reload} />
      </div>
      <Messages email={email} onError={account.reload} />
    </Page>
  );
}

function Messages(props: { email: string; onError: () => void }) {
  const [mailbox, setMailbox] = useState<Mailbox>('INBOX');
  const [messages, setMessages] = useState<MailMessage[] | null>(null);
  const [open, setOpen] = useState<MailMessage | null>(null);
  const action = useAction();
  const load = (mode: 'new' | 'all') =>
    action.run(async () => {
      setOpen(null);
      if (mode === 'new') {
        const res = await jobCall<{ message?: MailMessage | null; messages?: MailMessage[] }>('/api/mail-new', { email: props.email, mailbox });
        const list = res.messages ?? (res.message ? [res.message] : []);
        setMessages(list);
        if (list[0]) setOpen(list[0]);
      } else {
        const res = await jobCall<{ messages: MailMessage[] }>('/api/mail-all', { email: props.email, mailbox, limit: 50 });
        setMessages(res.messages);
      }
    });
  useEffect(() => {
    if (action.error) props.onError();
  }, [action.error, props.onError]);
  return (
    <section class="card">
      <h2>{t('mail.messages')}</h2>
      <div class="inline-form">
        <SelectField
          label={t('mail.folder')}
          fieldClass="narrow"
          name="mailbox"
          value={mailbox}
          onValue={(v) => setMailbox(v as Mailbox)}
          choices={[
            { value: 'INBOX', label: t('mail.inbox') },
            { value: 'Junk', label: t('mail.junk') },
          ]}
        />
        <button type="button" class="primary" disabled={action.busy} onClick={() => void load('new')}>
          {t('mail.latest')}
        </button>
        <button type="button" disabled={action.busy} onClick={() => void load('all')}>
          {t('mail.all')}
        </button>
      </div>
      <ErrorNote error={action.error} />
      {action.busy && <Loading label={t('mail.fetching')} />}
      {messages && messages.length === 0 && !action.busy && <Empty>{t('mail.empty')}</Empty>}
      {messages && messages.length > 0 && (
        <div class="mail-view">
          <ul class="message-list" data-testid="messages">
            {messages.map((m) => (
              <li key={m.id}>
                <button type="button" class={open?.id === m.id ? 'message current' : 'message'} aria-pressed={open?.id === m.id} onClick={() => setOpen(m)}>
                  <strong>{m.subject || t('mail.noSubject')}</strong>
                  <span class="muted">{m.from ? m.from.name || m.from.address : '—'}</span>
                  <span class="muted small">{fmtDate(m.date)}</span>
                </button>
              </li>
            ))}
          </ul>
          {open ? <MessageView message={open} /> : <p class="muted">{t('mail.pickMessage')}</p>}
        </div>
      )}
    </section>
  );
}

function MessageView(props: { message: MailMessage }) {
  const m = props.message;
  return (
    <article class="message-view" data-testid="message-view">
      <h3>{m.subject || t('mail.noSubject')}</h3>
      <Facts
        facts={[
          { label: t('mail.from'), value: m.from ? `${m.from.name ? `${m.from.name} ` : ''}<${m.from.address}>` : '—' },
          { label: t('mail.to'), value: m.to.map((a) => a.address).join(', ') },
          { label: t('mail.date'), value: fmtDate(m.date) },
          { label: t('mail.folder'), value: m.mailbox === 'Junk' ? t('mail.junk') : t('mail.inbox') },
        ]}
      />
      {m.html !== null ? (
        <>
          <p class="hint">{t('mail.safeView')}</p>
          <iframe class="mail-frame" sandbox="" referrerpolicy="no-referrer" title={t('mail.body')} srcdoc={mailDocument(m.html)} />
        </>
      ) : (
        <pre class="mail-text">{m.text ?? m.snippet ?? ''}</pre>
      )}
    </article>
  );
}

function CodeCard(props: { email: string }) {
  const [from, setFrom] = useState('');
  const [subject, setSubject] = useState('');
  const [wait, setWait] = useState('60');
  const [onlyNew, setOnlyNew] = useState(true);
  const [running, setRunning] = useState<{ jobId: string | null; state: JobState | 'sending'; started: number; wait: number } | null>(null);
  const [elapsed, setElapsed] = useState(0);
  /** The code found, or 'none' when the wait ended without one. */
  const [answer, setAnswer] = useState<CodeAnswer | 'none' | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const watch = useRef<JobWatch | null>(null);

  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => setElapsed((Date.now() - running.started) / 1000), 250);
    return () => clearInterval(timer);
  }, [running]);
  useEffect(() => () => watch.current?.close(), []);

  const start = async (e: Event) => {
    e.preventDefault();
    const seconds = Math.min(120, Math.max(0, Number(wait) || 0));
    setAnswer(null);
    setError(undefined);
    setElapsed(0);
    const started = Date.now();
    setRunning({ jobId: null, state: 'sending', started, wait: seconds });
    try {
      // Asked to answer at once (202): the wait is followed live over the job's events.
      const res = await call<Accepted>(
        'POST',
        '/api/vendor-email/extract-code',
        {
          email: props.email,
          from: from.trim() || undefined,
          subject: subject.trim() || undefined,
          wait: seconds,
          since: onlyNew ? new Date(started - 2000).toISOString() : undefined,
        },
        { headers: { prefer: 'respond-async' } },
      );
      const jobId = res.data.jobId;
      setRunning((r) => r && { ...r, jobId, state: res.data.state });
      watch.current = watchJob(jobId, { onState: (job) => setRunning((r) => r && { ...r, state: job.state }) });
      const result = (await watch.current.done) as CodeAnswer;
      setAnswer(result);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'no_code') setAnswer('none');
      else if ((err as Error).name !== 'AbortError') setError(err);
    } finally {
      watch.current = null;
      setRunning(null);
    }
  };

  return (
    <section class="card">
      <h2>{t('mail.code')}</h2>
      <p class="muted">{t('mail.codeIntro')}</p>
      <form class="form" onSubmit={start}>
        <div class="inline-form">
          <InputField label={t('mail.fromFilter')} fieldClass="grow" name="from" placeholder="noreply@service.example" value={from} onValue={setFrom} />
          <InputField label={t('mail.subjectFilter')} fieldClass="grow" name="subject" value={subject} onValue={setSubject} />
          <InputField label={t('mail.waitSeconds')} name="wait" type="number" min={0} max={120} value={wait} onValue={setWait} />
        </div>
        <CheckField name="only-new" checked={onlyNew} onChecked={setOnlyNew}>
          {t('mail.onlyNew')}
        </CheckField>
        <div class="form-actions left">
          <button type="submit" class="primary" disabled={!!running}>
            {t('mail.getCode')}
          </button>
          {running && (
            <button type="button" onClick={() => watch.current?.close()}>
              {t('mail.stopWaiting')}
            </button>
          )}
        </div>
      </form>
      {running && (
        <div class="waiting" role="status" data-testid="code-progress">
          <progress max={Math.max(1, running.wait)} value={Math.min(running.wait, elapsed)} />
          <span>
            {t('mail.waiting', { s: Math.floor(elapsed), of: running.wait })} · <Badge tone="info">{t(jobStateKey(running.state))}</Badge>
          </span>
        </div>
      )}
      <ErrorNote error={error} />
      {answer &&
        (answer !== 'none' ? (
          <div class="code-found" role="status" data-testid="code-result">
            <span class="code">{answer.code}</span>
            <CopyButton text={answer.code} />
            <p class="muted">
              {t('mail.codeFrom', { subject: answer.message.subject || t('mail.noSubject'), from: answer.message.from?.address ?? '—' })}
              {` · ${t('mail.codeWhere', { source: answer.source, keyword: answer.keyword })}`}
            </p>
          </div>
        ) : (
          <p class="note warn" role="status">
            {t('mail.noCode')}
          </p>
        ))}
    </section>
  );
}

function CleanCard(props: { email: string; onDone: () => void }) {
  const action = useAction();
  const empty = async (mailbox: Mailbox) => {
    const name = mailbox === 'Junk' ? t('mail.junk') : t('mail.inbox');
    const ask = {
      title: t('mail.emptyTitle', { folder: name }),
      message: t('mail.emptyText', { folder: name, email: props.email }),
      confirmLabel: t('mail.emptyConfirm'),
    };
    await action.runIfConfirmed(ask, async () => {
      const res = await jobCall<{ deleted: number }>(mailbox === 'Junk' ? '/api/process-junk' : '/api/process-inbox', { email: props.email });
      toast(t('mail.emptied', { n: res.deleted, folder: name }));
      props.onDone();
    });
  };
  return (
    <section class="card">
      <h2>{t('mail.clean')}</h2>
      <p class="muted">{t('mail.cleanIntro')}</p>
      <div class="form-actions left">
        <button type="button" class="danger" disabled={action.busy} onClick={() => void empty('INBOX')}>
          {t('mail.emptyInbox')}
        </button>
        <button type="button" class="danger" disabled={action.busy} onClick={() => void empty('Junk')}>
          {t('mail.emptyJunk')}
        </button>
      </div>
      <ErrorNote error={action.error as ApiError | undefined} />
    </section>
  );
}
