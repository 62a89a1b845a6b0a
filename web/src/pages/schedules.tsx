// Schedules: jobs run on a cron expression or every interval, as their owner — list with next runs, create, pause and
// resume, delete. Admins also see the system schedules (log upkeep), which are paused, not deleted.
import { useState } from 'preact/hooks';
import { call, del, post } from '../api';
import { LoadedTable, RowButtons } from '../data-table';
import { ActionForm, InputField, SelectField } from '../form';
import { fmtDate } from '../format';
import { t } from '../i18n';
import { useListChanges } from '../paged-list';
import type { MailAccount, Schedule } from '../types';
import { askDelete, Badge, DialogFor, ErrorNote, Page, toast, useAction, useAsync } from '../ui';

const every = (ms: number) => (ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`);
const timingOf = (s: Schedule) => (s.cron ? `${s.cron} (${s.tz})` : t('sched.every', { every: every(s.interval_ms ?? 0) }));
const whatOf = (s: Schedule) => (s.system ? t('sched.system') : `${String(s.params.email ?? '')} · ${String(s.params.mailbox ?? '')}`);

export default function SchedulesPage() {
  const schedules = useAsync(async () => (await call<Schedule[]>('GET', '/api/schedules?limit=100')).data, []);
  const [creating, setCreating] = useState(false);
  const { action, change, changeIfConfirmed } = useListChanges(schedules);
  const toggle = (s: Schedule) => change(() => call('PATCH', `/api/schedules/${s.id}`, { enabled: !s.enabled }));
  const remove = (s: Schedule) =>
    changeIfConfirmed(askDelete(t('sched.deleteTitle'), t('sched.deleteText', { name: s.name })), async () => {
      await del(`/api/schedules/${s.id}`);
      toast(t('sched.deleted', { name: s.name }));
    });
  return (
    <Page
      title={t('sched.title')}
      actions={
        <button type="button" class="primary" onClick={() => setCreating(true)}>
          {t('sched.create')}
        </button>
      }
    >
      <p class="muted">{t('sched.intro')}</p>
      <ErrorNote error={schedules.error} onRetry={schedules.reload} />
      <ErrorNote error={action.error} />
      <LoadedTable
        loading={schedules.loading}
        rows={schedules.data}
        empty={t('sched.none')}
        testId="schedules-table"
        rowKey={(s) => s.id}
        columns={[
          { head: t('common.name'), cell: (s) => s.name },
          { head: t('sched.kind'), cell: (s) => <code>{s.kind}</code> },
          { head: t('sched.what'), cell: (s) => whatOf(s) },
          { head: t('sched.when'), cell: (s) => timingOf(s) },
          { head: t('sched.next'), cell: (s) => fmtDate(s.next_runs[0] ?? null) || '—' },
          {
            head: t('sched.last'),
            cell: (s) => (s.last_run_at ? `${fmtDate(s.last_run_at)} · ${s.last_outcome ?? ''}` : '—'),
          },
          {
            head: t('common.status'),
            cell: (s) =>
              s.enabled ? (
                <Badge tone="ok">{t('common.enabled')}</Badge>
              ) : (
                <Badge tone={s.paused_reason ? 'bad' : 'muted'} title={s.paused_reason ?? undefined}>
                  {s.paused_reason ? t('sched.pausedBecause', { reason: s.paused_reason }) : t('sched.paused')}
                </Badge>
              ),
          },
        ]}
        actions={(s) => (
          <RowButtons enabled={s.enabled} busy={action.busy} onToggle={() => void toggle(s)} onDelete={s.system ? undefined : () => void remove(s)} />
        )}
      />
      <DialogFor value={creating} title={() => t('sched.create')} onClose={() => setCreating(false)} wide>
        {() => (
          <CreateSchedule
            onDone={(s) => {
              setCreating(false);
              toast(t('sched.created', { name: s.name }));
              schedules.reload();
            }}
            onCancel={() => setCreating(false)}
          />
        )}
      </DialogFor>
    </Page>
  );
}

function CreateSchedule(props: { onDone: (s: Schedule) => void; onCancel: () => void }) {
  const accounts = useAsync(async () => (await call<MailAccount[]>('GET', '/api/mail/accounts')).data, []);
  const [name, setName] = useState('');
  const [kind, setKind] = useState<'mail.purge' | 'mail.fetch'>('mail.purge');
  const [email, setEmail] = useState('');
  const [mailbox, setMailbox] = useState('Junk');
  const [mode, setMode] = useState<'interval' | 'cron'>('interval');
  const [minutes, setMinutes] = useState('60');
  const [cron, setCron] = useState('0 8 * * 1-5');
  const [tz, setTz] = useState(Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC');
  const action = useAction();
  const choices = (accounts.data ?? []).map((a) => ({ value: a.email, label: a.email }));
  const submit = async () => {
    const timing = mode === 'interval' ? { interval_ms: Math.round(Number(minutes) * 60_000) } : { cron: cron.trim(), tz: tz.trim() };
    const body = { name: name.trim(), kind, params: { email: email || choices[0]?.value, mailbox }, ...timing };
    props.onDone(await post<Schedule>('/api/schedules', body));
  };
  return (
    <ActionForm action={action} onSubmit={submit} onCancel={props.onCancel} submitLabel={t('sched.create')} blocked={choices.length === 0}>
      <InputField label={t('common.name')} name="name" required maxLength={100} value={name} onValue={setName} />
      <SelectField
        label={t('sched.kind')}
        name="kind"
        value={kind}
        onValue={(v) => setKind(v as typeof kind)}
        choices={[
          { value: 'mail.purge', label: t('sched.kind.purge') },
          { value: 'mail.fetch', label: t('sched.kind.fetch') },
        ]}
      />
      {choices.length === 0 && !accounts.loading ? <p class="hint">{t('sched.noAccounts')}</p> : null}
      <div class="inline-form">
        <SelectField label={t('mail.email')} name="email" value={email || String(choices[0]?.value ?? '')} onValue={setEmail} choices={choices} />
        <SelectField
          label={t('sched.mailbox')}
          name="mailbox"
          value={mailbox}
          onValue={setMailbox}
          choices={[
            { value: 'INBOX', label: 'INBOX' },
            { value: 'Junk', label: 'Junk' },
          ]}
        />
      </div>
      <fieldset class="segmented">
        <legend>{t('sched.when')}</legend>
        <label>
          <input type="radio" name="mode" value="interval" checked={mode === 'interval'} onChange={() => setMode('interval')} />
          {t('sched.interval')}
        </label>
        <label>
          <input type="radio" name="mode" value="cron" checked={mode === 'cron'} onChange={() => setMode('cron')} />
          cron
        </label>
      </fieldset>
      {mode === 'interval' ? (
        <InputField label={t('sched.minutes')} name="minutes" type="number" min={1} step={1} required value={minutes} onValue={setMinutes} />
      ) : (
        <div class="inline-form">
          <InputField label="cron" name="cron" required value={cron} onValue={setCron} hint={t('sched.cronHint')} />
          <InputField label={t('sched.tz')} name="tz" required value={tz} onValue={setTz} />
        </div>
      )}
    </ActionForm>
  );
}
