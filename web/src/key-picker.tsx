// Choose the API key a /v1 call goes out with: one made in this tab (kept in memory), one pasted, or a new one that
// expires by itself (the page cannot show a key again after a reload, so a permanent one per visit would pile up).
import { useState } from 'preact/hooks';
import { post } from './api';
import { InputField, SelectField } from './form';
import { t } from './i18n';
import { maskKey, rememberKey, useRememberedKeys } from './keys-memory';
import type { Token } from './types';
import { ErrorNote, useAction } from './ui';

const PASTE = 'paste';

/**
 * `purpose` names the keys it makes ("playground (temporary)"); `hours` is how long they live (a batch's key must
 * outlive the batch's 24 hours and the download of its output).
 */
export function KeyPicker(props: { value: string; onChange: (key: string) => void; purpose: string; hours: number }) {
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
      const expires = Math.floor(Date.now() / 1000) + props.hours * 3600;
      const tok = await post<Token>('/api/token/', { name: t('picker.keyName', { purpose: props.purpose }), unlimited_quota: true, expired_time: expires });
      rememberKey({ id: tok.id, name: tok.name, key: tok.key });
      setChoice(tok.key);
      props.onChange(tok.key);
    });

  return (
    <div class="key-picker">
      <div class="inline-form">
        <SelectField
          label={t('picker.key')}
          hint={t('picker.hint', { hours: props.hours })}
          name="key"
          value={choice}
          onValue={choose}
          choices={[
            ...remembered.map((k) => ({ value: k.key, label: `${k.name || `#${k.id}`} (${maskKey(k.key)})` })),
            { value: PASTE, label: t('picker.paste') },
          ]}
        />
        <button type="button" disabled={action.busy} onClick={() => void create()}>
          {t('picker.create')}
        </button>
      </div>
      {choice === PASTE && (
        <InputField
          label={t('picker.pasteLabel')}
          name="pasted-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          placeholder="sk-…"
          value={pasted}
          onValue={(v) => {
            setPasted(v);
            props.onChange(v.trim());
          }}
        />
      )}
      <ErrorNote error={action.error} />
    </div>
  );
}
