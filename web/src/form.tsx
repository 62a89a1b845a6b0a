// Forms: labelled inputs, text areas, menus and check boxes bound to a value, and a form that runs its submit as an
// action (busy while it runs, its failure shown above the fields) with its Cancel and submit buttons.
import type { ComponentChildren, InputHTMLAttributes, SelectHTMLAttributes, TextareaHTMLAttributes } from 'preact';
import { t } from './i18n';
import { type Action, ErrorNote, Field } from './ui';

interface Bound {
  /** The visible label, which also names the control. */
  label: string;
  /** A description under the control (aria-describedby). */
  hint?: string;
  /** The field's own class ("grow", …), not the control's. */
  fieldClass?: string;
  value: string;
  onValue: (value: string) => void;
}

type InputProps = Omit<InputHTMLAttributes<HTMLInputElement>, 'value' | 'onInput' | 'class' | 'children'>;
type TextAreaProps = Omit<TextareaHTMLAttributes<HTMLTextAreaElement>, 'value' | 'onInput' | 'class' | 'children'>;
type SelectProps = Omit<SelectHTMLAttributes<HTMLSelectElement>, 'value' | 'onChange' | 'class' | 'children'>;

export interface Choice {
  value: string | number;
  label: string;
}

/** A labelled <input> (text, number, password, …) whose value is `value`; typing calls `onValue`. */
export function InputField(props: Bound & InputProps) {
  const { label, hint, fieldClass, value, onValue, ...input } = props;
  return (
    <Field label={label} hint={hint} class={fieldClass}>
      <input {...(input as InputHTMLAttributes<HTMLInputElement>)} value={value} onInput={(e) => onValue(e.currentTarget.value)} />
    </Field>
  );
}

/** A labelled <textarea> whose value is `value`; typing calls `onValue`. */
export function TextAreaField(props: Bound & TextAreaProps) {
  const { label, hint, fieldClass, value, onValue, ...area } = props;
  return (
    <Field label={label} hint={hint} class={fieldClass}>
      <textarea {...area} value={value} onInput={(e) => onValue(e.currentTarget.value)} />
    </Field>
  );
}

/** A labelled <select> of `choices` whose value is `value`; choosing calls `onValue`. */
export function SelectField(props: Bound & SelectProps & { choices: Choice[] }) {
  const { label, hint, fieldClass, value, onValue, choices, ...select } = props;
  return (
    <Field label={label} hint={hint} class={fieldClass}>
      <select {...(select as SelectHTMLAttributes<HTMLSelectElement>)} value={value} onChange={(e) => onValue(e.currentTarget.value)}>
        {choices.map((c) => (
          <option key={c.value} value={c.value}>
            {c.label}
          </option>
        ))}
      </select>
    </Field>
  );
}

/** A check box inside its label. */
export function CheckField(props: { name: string; checked: boolean; onChecked: (checked: boolean) => void; children: ComponentChildren }) {
  return (
    <label class="check">
      <input type="checkbox" name={props.name} checked={props.checked} onChange={(e) => props.onChecked(e.currentTarget.checked)} />
      {props.children}
    </label>
  );
}

/**
 * A form whose submit runs `onSubmit` as `action`: what failed is shown between `head` and the fields, the
 * submit button is disabled while it runs, and Cancel (when `onCancel` is given) comes before it.
 */
export function ActionForm(props: {
  action: Action;
  onSubmit: () => Promise<unknown>;
  submitLabel: string;
  onCancel?: () => void;
  cancelLabel?: string;
  /** The form cannot be sent yet: its submit button is disabled and submitting does nothing. */
  blocked?: boolean;
  class?: string;
  /** Above the error: a heading, an explanation, or fields whose failure reads best below them. */
  head?: ComponentChildren;
  children?: ComponentChildren;
}) {
  const { action } = props;
  return (
    <form
      class={props.class ?? 'form'}
      onSubmit={(e) => {
        e.preventDefault();
        if (!props.blocked) void action.run(props.onSubmit);
      }}
    >
      {props.head}
      <ErrorNote error={action.error} />
      {props.children}
      <div class="form-actions">
        {props.onCancel && (
          <button type="button" onClick={props.onCancel}>
            {props.cancelLabel ?? t('common.cancel')}
          </button>
        )}
        <button type="submit" class="primary" disabled={action.busy || !!props.blocked}>
          {props.submitLabel}
        </button>
      </div>
    </form>
  );
}
