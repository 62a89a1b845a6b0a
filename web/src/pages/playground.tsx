// Embeddings playground: pick a key and a model, type texts, see dimensions, tokens and how similar the texts are.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, get, post } from '../api';
import { CheckField, InputField, SelectField } from '../form';
import { fmtNumber } from '../format';
import { t } from '../i18n';
import { KeyPicker } from '../key-picker';
import { useRememberedKeys } from '../keys-memory';
import type { Model } from '../types';
import { ErrorNote, Page, useAction, useAsync } from '../ui';

interface EmbeddingsAnswer {
  data: { index: number; embedding: number[] }[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

interface Outcome {
  texts: string[];
  vectors: number[][];
  tokens: number;
  model: string;
  ms: number;
}

const EXAMPLE = ['How do I reset my password?', 'Password reset instructions', '如何重置我的密码？', 'The weather is nice today'];

const USE_LITE = 'use-lite';

/**
 * The server names a text by its place in what was sent (`input[2]`), which is not the number of its box when boxes are
 * left empty, and suggests a request field: said again in the form's terms (its text number, its check box).
 */
function inFormWords(err: unknown, sent: { number: number }[]): unknown {
  if (!(err instanceof ApiError) || err.code !== 'unsupported_text') return err;
  const i = Number(/^input\[(\d+)\]/.exec(err.detail)?.[1]);
  const n = sent[i]?.number;
  if (n === undefined) return err;
  return new ApiError(err.status, t('playground.unsupported', { n, model: USE_LITE, allow: t('playground.allowOther') }), err.code);
}

export function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

export default function PlaygroundPage() {
  const remembered = useRememberedKeys();
  const [key, setKey] = useState(remembered[0]?.key ?? '');
  const [model, setModel] = useState('');
  const [texts, setTexts] = useState<string[]>(['', '']);
  const [dimensions, setDimensions] = useState('');
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const [allowOther, setAllowOther] = useState(false);
  const action = useAction();

  const models = useAsync(async () => {
    if (!key.startsWith('sk-')) return [] as Model[];
    return (await get<{ data: Model[] }>('/v1/models', { headers: { authorization: `Bearer ${key}` } })).data;
  }, [key]);
  useEffect(() => {
    const list = models.data ?? [];
    if (list.length && !list.some((m) => m.id === model)) setModel(list.find((m) => m.id === 'local-hash-v1')?.id ?? list[0]!.id);
  }, [models.data, model]);

  // The texts sent, and for each the number of its box in the form (empty boxes are not sent): the server's input[i] is
  // the form's "Text {number[i]}".
  const sent = texts.flatMap((x, i) => (x.trim() ? [{ text: x.trim(), number: i + 1 }] : []));
  const filled = sent.map((x) => x.text);
  const lite = model === USE_LITE;
  // A result is of the model and texts it was made with: another model (or a failed run) takes it off the page.
  useEffect(() => setOutcome(null), [model]);
  const run = (e: Event) => {
    e.preventDefault();
    setOutcome(null);
    void action.run(async () => {
      const started = performance.now();
      const body: Record<string, unknown> = { model, input: filled };
      if (dimensions.trim()) body.dimensions = Number(dimensions);
      if (lite && allowOther) body.allow_unsupported_text = true;
      try {
        const res = await post<EmbeddingsAnswer>('/v1/embeddings', body, { headers: { authorization: `Bearer ${key}` } });
        const vectors = [...res.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
        setOutcome({ texts: filled, vectors, tokens: res.usage.prompt_tokens, model: res.model, ms: performance.now() - started });
      } catch (err) {
        throw inFormWords(err, sent);
      }
    });
  };

  return (
    <Page title={t('playground.title')}>
      <p class="muted">{t('playground.intro')}</p>
      <form class="form card" onSubmit={run}>
        <KeyPicker value={key} onChange={setKey} purpose="playground" hours={24} />
        <ErrorNote error={models.error} />
        <div class="inline-form">
          <SelectField
            label={t('common.model')}
            name="model"
            value={model}
            disabled={!models.data?.length}
            onValue={setModel}
            choices={
              models.data?.length
                ? models.data.map((m) => ({ value: m.id, label: m.id }))
                : [{ value: '', label: key ? t('playground.noModels') : t('playground.pickKeyFirst') }]
            }
          />
          <InputField
            label={t('playground.dimensions')}
            hint={t('playground.dimensionsHint')}
            name="dimensions"
            type="number"
            min={1}
            value={dimensions}
            onValue={setDimensions}
          />
        </div>
        <fieldset class="texts">
          <legend>{t('playground.texts')}</legend>
          {texts.map((text, i) => (
            <div class="text-row" key={i}>
              <div class="field">
                <label class="field-label" for={`text-${i + 1}`}>
                  {t('playground.textN', { n: i + 1 })}
                </label>
                <textarea
                  id={`text-${i + 1}`}
                  name={`text-${i + 1}`}
                  rows={2}
                  value={text}
                  onInput={(e) => {
                    const v = e.currentTarget.value;
                    setTexts((list) => list.map((x, j) => (j === i ? v : x)));
                  }}
                />
              </div>
              {texts.length > 2 && (
                <button
                  type="button"
                  class="icon"
                  aria-label={t('playground.removeText', { n: i + 1 })}
                  onClick={() => setTexts((list) => list.filter((_, j) => j !== i))}
                >
                  ×
                </button>
              )}
            </div>
          ))}
          <div class="form-actions left">
            <button type="button" disabled={texts.length >= 16} onClick={() => setTexts((list) => [...list, ''])}>
              {t('playground.addText')}
            </button>
            <button type="button" onClick={() => setTexts(EXAMPLE)}>
              {t('playground.example')}
            </button>
          </div>
        </fieldset>
        {lite && (
          <CheckField name="allow_unsupported_text" checked={allowOther} onChecked={setAllowOther}>
            {t('playground.allowOther')}
          </CheckField>
        )}
        <ErrorNote error={action.error} />
        <div class="form-actions">
          <button type="submit" class="primary" disabled={action.busy || !model || filled.length < 2}>
            {action.busy ? t('playground.running') : t('playground.run')}
          </button>
        </div>
        {filled.length < 2 && <p class="hint">{t('playground.needTwo')}</p>}
      </form>
      {outcome && <Result outcome={outcome} />}
    </Page>
  );
}

function Result(props: { outcome: Outcome }) {
  const { texts, vectors, tokens, model, ms } = props.outcome;
  return (
    <section class="card" aria-live="polite" data-testid="playground-result">
      <h2>{t('playground.result')}</h2>
      <dl class="facts inline">
        <div>
          <dt>{t('common.model')}</dt>
          <dd>{model}</dd>
        </div>
        <div>
          <dt>{t('playground.dimensions')}</dt>
          <dd data-testid="dims">{vectors[0]?.length ?? 0}</dd>
        </div>
        <div>
          <dt>{t('common.tokens')}</dt>
          <dd data-testid="tokens">{fmtNumber(tokens)}</dd>
        </div>
        <div>
          <dt>{t('playground.time')}</dt>
          <dd>{fmtNumber(Math.round(ms))} ms</dd>
        </div>
      </dl>
      <h3>{t('playground.matrix')}</h3>
      <p class="hint">{t('playground.matrixHint')}</p>
      <div class="table-wrap">
        <table class="matrix" data-testid="matrix">
          <thead>
            <tr>
              <th scope="col">
                <span class="sr-only">{t('playground.texts')}</span>
              </th>
              {texts.map((_, j) => (
                <th scope="col" key={j}>
                  #{j + 1}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {texts.map((text, i) => (
              <tr key={i}>
                <th scope="row" title={text}>
                  #{i + 1} <span class="muted clip">{text}</span>
                </th>
                {texts.map((_, j) => {
                  const c = cosine(vectors[i]!, vectors[j]!);
                  return (
                    <td key={j} class="num" style={{ background: `hsl(217 90% 55% / ${Math.max(0, c) * 0.6})` }}>
                      {c.toFixed(3)}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
