// Choose the API key a /v1 call goes out with: one made in this tab (kept in memory), one pasted, or a new one.
import { useState } from 'preact/hooks';
import { post } from './api';
import { t } from './i18n';
import { maskKey, rememberKey, useRememberedKeys } from './keys-memory';
import type { Token } from './types';
import { ErrorNote, Field, useAction } from './ui';

const PASTE = 'paste';

export function KeyPicker(props: { value: string; onChange: (key: string) => void; purpose: string }) {
  const remembered = useRememberedKeys();
  const [choice, setChoice] = useState<string>(() => (remembered.find((k) => k.key === props.value) ? props.value : (remembered[0]?.key ?? PASTE)));
  const [pasted, setPasted] = useState(remembered.some((k) => k.key === props.value) ? '' : props.value);
  const action = useAction();

  const choose = (v: string) => {
    setChoice(v);
    props.onChange(v === PASTE ? pasted.trim() : v);
  };
  const create = () =>
    action.run(async () => {
      const tok = await post<Token>('/api/token/', { name: props.purpose, unlimited_quota: true });
      rememberKey({ id: tok.id, name: tok.name, key: tok.key });
      setChoice(tok.key);
      props.onChange(tok.key);
    });

  return (
    <div class="key-picker">
      <div class="inline-form">
        <Field label={t('picker.key')} hint={t('picker.hint')}>
          <select name="key" value={choice} onChange={(e) => choose(e.currentTarget.value)}>
            {remembered.map((k) => (
              <option key={k.id} value={k.key}>
                {`${k.name || `#${k.id}`} (${maskKey(k.key)})`}
              </option>
            ))}
            <option value={PASTE}>{t('picker.paste')}</option>
          </select>
        </Field>
        <button type="button" disabled={action.busy} onClick={() => void create()}>
          {t('picker.create')}
        </button>
      </div>
      {choice === PASTE && (
        <Field label={t('picker.pasteLabel')}>
          <input
            name="pasted-key"
            type="password"
            autocomplete="off"
            spellcheck={false}
            placeholder="sk-…"
            value={pasted}
            onInput={(e) => {
              setPasted(e.currentTarget.value);
              props.onChange(e.currentTarget.value.trim());
            }}
          />
        </Field>
      )}
      <ErrorNote error={action.error} />
    </div>
  );
}
