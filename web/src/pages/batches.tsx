// Batches: OpenAI's Batch API for /v1/embeddings from the console — upload a JSONL file and start a batch, follow each
// batch's progress (request_counts, polled while any has not ended), cancel one, download its output and error files.
// The /v1 endpoints take an API key, not the session: the key comes from the playground's picker (one made in this
// tab, or pasted; a new one only when asked for), never made on a visit.
import { useEffect, useRef, useState } from 'preact/hooks';
import { del, get, getBytes, post } from '../api';
import { LoadedTable } from '../data-table';
import { ActionForm } from '../form';
import { fmtDate, fmtNumber } from '../format';
import { type MessageKey, t } from '../i18n';
import { KeyPicker } from '../key-picker';
import { useRememberedKeys } from '../keys-memory';
import type { Batch, BatchPage, BatchStatus, FileObject } from '../types';
import { Badge, Empty, ErrorNote, Field, Page, type Tone, toast, useAction, useAsync } from '../ui';

/** How often the list is read again while a batch has not ended. */
const POLL_MS = 2_000;
/** The newest this many batches are listed (GET /v1/batches takes at most 100). */
const LIMIT = 100;
const ENDED: BatchStatus[] = ['completed', 'failed', 'expired', 'cancelled'];
/** What POST /v1/batches/{id}/cancel takes (finalizing, cancelling and ended batches answer 409). */
const CANCELLABLE: BatchStatus[] = ['validating', 'in_progress'];

const STATUS: Record<BatchStatus, { tone: Tone; label: MessageKey }> = {
  validating: { tone: 'info', label: 'batches.status.validating' },
  in_progress: { tone: 'info', label: 'batches.status.in_progress' },
  finalizing: { tone: 'info', label: 'batches.status.finalizing' },
  completed: { tone: 'ok', label: 'batches.status.completed' },
  failed: { tone: 'bad', label: 'batches.status.failed' },
  expired: { tone: 'warn', label: 'batches.status.expired' },
  cancelling: { tone: 'warn', label: 'batches.status.cancelling' },
  cancelled: { tone: 'muted', label: 'batches.status.cancelled' },
};

const isEnded = (b: Batch) => ENDED.includes(b.status);

/** Saves bytes under a name, as a download. */
function save(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export default function BatchesPage() {
  const remembered = useRememberedKeys();
  const [key, setKey] = useState(remembered[0]?.key ?? '');
  const usable = key.startsWith('sk-');
  const auth = { authorization: `Bearer ${key}` };
  const batches = useAsync(async () => (usable ? (await get<BatchPage>(`/v1/batches?limit=${LIMIT}`, { headers: auth })).data : undefined), [key]);
  const action = useAction();

  // Polled while a batch has not ended: the next read is asked for when the last one is back.
  const running = batches.data?.some((b) => !isEnded(b)) ?? false;
  useEffect(() => {
    if (!running || batches.loading) return;
    const timer = setTimeout(batches.reload, POLL_MS);
    return () => clearTimeout(timer);
  }, [running, batches.loading, batches.data]);

  const cancel = (b: Batch) =>
    action.runIfConfirmed({ title: t('batches.cancelTitle'), message: t('batches.cancelText', { id: b.id }), confirmLabel: t('batches.cancel') }, async () => {
      await post<Batch>(`/v1/batches/${encodeURIComponent(b.id)}/cancel`, undefined, { headers: auth });
      batches.reload();
    });
  const download = (fileId: string) =>
    action.run(async () => {
      const { blob, filename } = await getBytes(`/v1/files/${encodeURIComponent(fileId)}/content`, { headers: auth });
      save(blob, filename || `${fileId}.jsonl`);
    });

  return (
    <Page
      title={t('batches.title')}
      actions={
        usable && (
          <button type="button" onClick={batches.reload} disabled={batches.loading}>
            {t('common.refresh')}
          </button>
        )
      }
    >
      <p class="muted">{t('batches.intro')}</p>
      <div class="card">
        <KeyPicker value={key} onChange={setKey} purpose="batches" hours={168} />
        <UploadForm
          auth={auth}
          usable={usable}
          onCreated={(b) => {
            toast(t('batches.started', { id: b.id }));
            batches.reload();
          }}
        />
      </div>
      <h2>{t('batches.list')}</h2>
      {!usable ? (
        <Empty>{t('batches.pickKey')}</Empty>
      ) : (
        <>
          <ErrorNote error={batches.error} onRetry={batches.reload} />
          <ErrorNote error={action.error} />
          <LoadedTable
            loading={batches.loading}
            rows={batches.data}
            empty={t('batches.none')}
            testId="batches-table"
            rowKey={(b) => b.id}
            columns={[
              { head: t('batches.batch'), cell: (b) => <code>{b.id}</code> },
              { head: t('common.status'), cell: (b) => <Badge tone={STATUS[b.status].tone}>{t(STATUS[b.status].label)}</Badge> },
              { head: t('common.model'), cell: (b) => b.model ?? '—' },
              { head: t('batches.created'), cell: (b) => fmtDate(b.created_at) },
              { head: t('batches.progress'), cell: (b) => <Progress batch={b} /> },
              { head: t('batches.counts'), cell: (b) => <Counts batch={b} /> },
              { head: t('batches.files'), cell: (b) => <Files batch={b} busy={action.busy} onDownload={(id) => void download(id)} /> },
            ]}
            actions={(b) =>
              CANCELLABLE.includes(b.status) && (
                <button type="button" class="small" disabled={action.busy} onClick={() => void cancel(b)}>
                  {t('batches.cancel')}
                </button>
              )
            }
            after={(b) =>
              b.errors?.data.length ? (
                <tr class="detail">
                  <td colSpan={8}>
                    <ValidationErrors batch={b} />
                  </td>
                </tr>
              ) : null
            }
          />
          {batches.data?.length === LIMIT && <p class="hint">{t('batches.newestOnly', { n: LIMIT })}</p>}
        </>
      )}
    </Page>
  );
}

/** An ended batch's output and error files (each only when it has lines), downloaded with the key. */
function Files(props: { batch: Batch; busy: boolean; onDownload: (fileId: string) => void }) {
  const b = props.batch;
  if (!isEnded(b)) return <span class="muted">—</span>;
  const files = [
    { id: b.output_file_id, label: t('batches.output') },
    { id: b.error_file_id, label: t('batches.errorFile') },
  ].filter((f): f is { id: string; label: string } => !!f.id);
  if (!files.length) return <span class="muted">{t('batches.noFiles')}</span>;
  return (
    <span class="file-links">
      {files.map((f) => (
        <button key={f.id} type="button" class="link" disabled={props.busy} onClick={() => props.onDownload(f.id)}>
          {f.label}
        </button>
      ))}
    </span>
  );
}

/** completed + failed of total; no bar while the file is being checked (the total is not known yet). */
function Progress(props: { batch: Batch }) {
  const { total, completed, failed } = props.batch.request_counts;
  const done = completed + failed;
  if (props.batch.status === 'validating') return <progress aria-label={t('batches.status.validating')} />;
  if (!total) return <span class="muted">—</span>;
  const pct = Math.floor((done / total) * 100);
  return (
    <span class="batch-progress">
      <progress max={total} value={done} aria-label={`${pct}%`} />
      <span class="small">{pct}%</span>
    </span>
  );
}

function Counts(props: { batch: Batch }) {
  const { total, completed, failed } = props.batch.request_counts;
  return (
    <span data-testid="batch-counts">{t('batches.countsText', { completed: fmtNumber(completed), failed: fmtNumber(failed), total: fmtNumber(total) })}</span>
  );
}

/** Why a file failed validation: each error with its line, code and message. */
function ValidationErrors(props: { batch: Batch }) {
  const errors = props.batch.errors?.data ?? [];
  return (
    <div class="batch-errors" data-testid="batch-errors">
      <strong>{t('batches.invalid', { n: errors.length })}</strong>
      <ul class="batch-error-list">
        {errors.map((e, i) => (
          <li key={i}>
            {e.line !== null && <span>{t('batches.line', { line: e.line })} · </span>}
            <code>{e.code}</code> · {e.message}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** Uploads a .jsonl file (POST /v1/files, purpose batch) and starts a batch of it (POST /v1/batches). */
function UploadForm(props: { auth: Record<string, string>; usable: boolean; onCreated: (b: Batch) => void }) {
  const [file, setFile] = useState<File | null>(null);
  const input = useRef<HTMLInputElement>(null);
  const action = useAction();
  const submit = async () => {
    const form = new FormData();
    form.append('purpose', 'batch');
    form.append('file', file!, file!.name);
    const uploaded = await post<FileObject>('/v1/files', undefined, { headers: props.auth, form });
    let batch: Batch;
    try {
      batch = await post<Batch>('/v1/batches', { input_file_id: uploaded.id, endpoint: '/v1/embeddings', completion_window: '24h' }, { headers: props.auth });
    } catch (err) {
      // No batch was made of it: the upload is not kept.
      await del(`/v1/files/${encodeURIComponent(uploaded.id)}`, { headers: props.auth }).catch(() => {});
      throw err;
    }
    setFile(null);
    if (input.current) input.current.value = '';
    props.onCreated(batch);
  };
  return (
    <ActionForm
      action={action}
      onSubmit={submit}
      submitLabel={action.busy ? t('batches.uploading') : t('batches.start')}
      blocked={!file || !props.usable}
      class="form upload-form"
    >
      <Field label={t('batches.file')} hint={t('batches.fileHint')}>
        <input
          ref={input}
          type="file"
          name="file"
          accept=".jsonl,.ndjson,application/jsonl,application/x-ndjson"
          onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)}
        />
      </Field>
      {file && <p class="hint">{t('batches.chosen', { name: file.name, size: fmtNumber(file.size) })}</p>}
    </ActionForm>
  );
}
