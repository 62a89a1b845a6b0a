// Tables of rows: headers and cells from one list of columns, a last column of buttons per row, and the states
// around a loaded list (loading the first time, none at all).
import { type ComponentChildren, Fragment } from 'preact';
import { t } from './i18n';
import { Empty, Loading } from './ui';

export interface Column<T> {
  /** The header's text (also the column's key: unique in its table). */
  head: string;
  cell: (row: T) => ComponentChildren;
  /** A column of numbers: right-aligned, header and cells. */
  num?: boolean;
  /** The cells' class (a column that is not `num`). */
  class?: string;
}

export interface TableProps<T> {
  /** `false` leaves a column out (one only some people see). */
  columns: (Column<T> | false)[];
  rowKey: (row: T) => string | number;
  testId?: string;
  /** A last column of buttons for each row, its header read out as "Actions". */
  actions?: (row: T) => ComponentChildren;
  /** What follows a row: a detail row opened under it. */
  after?: (row: T) => ComponentChildren;
}

export function DataTable<T>(props: TableProps<T> & { rows: T[] }) {
  const columns = props.columns.filter((c): c is Column<T> => c !== false);
  const { actions, after } = props;
  return (
    <div class="table-wrap">
      {/* On a phone each row becomes a block of "label value" lines (styles.css, table.rows): nothing to scroll sideways. */}
      <table class="rows" data-testid={props.testId}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.head} scope="col" class={c.num ? 'num' : undefined}>
                {c.head}
              </th>
            ))}
            {actions && (
              <th scope="col">
                <span class="sr-only">{t('common.actions')}</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <Fragment key={props.rowKey(row)}>
              <tr>
                {columns.map((c) => (
                  <td key={c.head} class={c.num ? 'num' : c.class} data-label={c.head}>
                    {c.cell(row)}
                  </td>
                ))}
                {actions && <td class="row-actions">{actions(row)}</td>}
              </tr>
              {after?.(row)}
            </Fragment>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A loaded list as a table: a spinner until it first arrives, `empty` when it has no rows. */
export function LoadedTable<T>(props: TableProps<T> & { loading: boolean; rows: T[] | undefined; empty: ComponentChildren }) {
  if (props.loading && !props.rows) return <Loading />;
  if (props.rows?.length === 0) return <Empty>{props.empty}</Empty>;
  return <DataTable {...props} rows={props.rows ?? []} />;
}

/** A row's buttons: its own first (`children`), then enable/disable, edit and delete, each where asked for. */
export function RowButtons(props: {
  children?: ComponentChildren;
  /** Whether the row is enabled now: the toggle offers the other state. */
  enabled?: boolean;
  onToggle?: () => void;
  /** Disables the toggle while another change runs. */
  busy?: boolean;
  onEdit?: () => void;
  onDelete?: () => void;
}) {
  return (
    <>
      {props.children}
      {props.onToggle && (
        <button type="button" disabled={props.busy} onClick={props.onToggle}>
          {props.enabled ? t('common.disable') : t('common.enable')}
        </button>
      )}
      {props.onEdit && (
        <button type="button" onClick={props.onEdit}>
          {t('common.edit')}
        </button>
      )}
      {props.onDelete && (
        <button type="button" class="danger" onClick={props.onDelete}>
          {t('common.delete')}
        </button>
      )}
    </>
  );
}
