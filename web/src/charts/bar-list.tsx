// A horizontal bar chart of a few labelled counts, drawn with plain elements (readable by screen readers as a list).
import { fmtNumber } from '../format';

export function BarList(props: { rows: { label: string; value: number }[]; label: string }) {
  const max = Math.max(1, ...props.rows.map((r) => r.value));
  return (
    <ul class="bar-list" aria-label={props.label}>
      {props.rows.map((r) => (
        <li key={r.label}>
          <span class="bar-label">{r.label}</span>
          <span class="bar-track">
            <span class="bar" style={{ width: `${(r.value / max) * 100}%` }} />
          </span>
          <span class="bar-value">{fmtNumber(r.value)}</span>
        </li>
      ))}
    </ul>
  );
}
