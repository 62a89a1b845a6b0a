// Log rows' details in the reader's language. The server writes a row's `content` in English, from a few sentence
// shapes (src/logs/entries.ts and the services that log through it); each shape is recognised here and its parts are
// put into the message of the same meaning (messages/*.ts, `logText.*`). A row of a shape not known here is shown as
// the server wrote it. No imports: test/unit/console-log-text.test.ts runs this against the server's own sentences.

export type LogTextKey =
  | 'logText.consumePriced'
  | 'logText.consumeFree'
  | 'logText.consumePricedCached'
  | 'logText.consumeFreeCached'
  | 'logText.freeCalls'
  | 'logText.failed'
  | 'logText.failedCode'
  | 'logText.redeemed'
  | 'logText.userCreated'
  | 'logText.userCreatedInGroup'
  | 'logText.initialQuota'
  | 'logText.quotaChanged'
  | 'logText.userChanged'
  | 'logText.userDeleted'
  | 'logText.channelCreated'
  | 'logText.channelChanged'
  | 'logText.channelDeleted'
  | 'logText.codesCreated'
  | 'logText.codeChanged'
  | 'logText.codeDeleted'
  | 'logText.jobRetried'
  | 'logText.channelDisabled'
  | 'logText.unreachable'
  | 'logText.reachable';

/** A change named in a row ("display name changed", "role 1 → 10"): the key of its words, and what follows them. */
export type ChangeKey =
  | 'logChange.displayName'
  | 'logChange.email'
  | 'logChange.password'
  | 'logChange.key'
  | 'logChange.username'
  | 'logChange.role'
  | 'logChange.status'
  | 'logChange.group';

export interface LogText {
  key: LogTextKey;
  vars: Record<string, string>;
  /** The changes a "changed" row lists, one by one (its `{changes}`). */
  changes?: string[];
}

/** "root (#1)": a username (ASCII letters, digits, _ . -) and its id. */
const WHO = String.raw`[A-Za-z0-9_.-]+ \(#\d+\)`;

const SHAPES: { re: RegExp; key: (g: Record<string, string>) => LogTextKey; changes?: boolean }[] = [
  {
    re: /^(?<model>.+?): (?<tokens>\d+) tokens, (?:(?<price>[0-9.e+-]+) quota per 1K tokens|free)(?<cache>, answered from the cache)?$/,
    key: (g) => (g.price ? (g.cache ? 'logText.consumePricedCached' : 'logText.consumePriced') : g.cache ? 'logText.consumeFreeCached' : 'logText.consumeFree'),
  },
  { re: /^(?<model>.+?): (?<calls>\d+) free calls in the minute from (?<time>\d\d:\d\d) UTC, (?<tokens>\d+) tokens$/, key: () => 'logText.freeCalls' },
  {
    re: /^(?<model>.+?) failed with (?<status>\d{3})(?: \((?<code>[a-z0-9_]+)\))?: (?<message>[\s\S]*)$/,
    key: (g) => (g.code ? 'logText.failedCode' : 'logText.failed'),
  },
  { re: /^Redeemed code #(?<id>\d+) "(?<name>.*)": \+(?<quota>\d+) quota$/, key: () => 'logText.redeemed' },
  {
    re: new RegExp(`^User (?<user>${WHO}) created by (?<actor>${WHO}) with role (?<role>\\d+)(?: in group (?<group>\\S+))?$`),
    key: (g) => (g.group ? 'logText.userCreatedInGroup' : 'logText.userCreated'),
  },
  { re: new RegExp(`^Initial quota (?<quota>\\d+) set by (?<actor>${WHO})$`), key: () => 'logText.initialQuota' },
  { re: new RegExp(`^Quota changed from (?<from>-?\\d+) to (?<to>-?\\d+) by (?<actor>${WHO})$`), key: () => 'logText.quotaChanged' },
  { re: new RegExp(`^User (?<user>${WHO}) changed by (?<actor>${WHO}): (?<changes>.+)$`), key: () => 'logText.userChanged', changes: true },
  { re: new RegExp(`^User (?<user>${WHO}) deleted by (?<actor>${WHO})$`), key: () => 'logText.userDeleted' },
  { re: new RegExp(`^Created channel #(?<id>\\d+) "(?<name>.*)" \\((?<detail>.*)\\) by (?<actor>${WHO})$`), key: () => 'logText.channelCreated' },
  { re: new RegExp(`^Changed channel #(?<id>\\d+) "(?<name>.*)": (?<changes>.+) by (?<actor>${WHO})$`), key: () => 'logText.channelChanged', changes: true },
  { re: new RegExp(`^Deleted channel #(?<id>\\d+) by (?<actor>${WHO})$`), key: () => 'logText.channelDeleted' },
  {
    re: new RegExp(`^Created (?<n>\\d+) redemption code\\(s\\) (?<range>#\\d+(?:-#\\d+)?) "(?<name>.*)" worth (?<quota>\\d+) quota each by (?<actor>${WHO})$`),
    key: () => 'logText.codesCreated',
  },
  { re: new RegExp(`^Changed redemption code #(?<id>\\d+): (?<changes>.+) by (?<actor>${WHO})$`), key: () => 'logText.codeChanged', changes: true },
  { re: new RegExp(`^Deleted redemption code #(?<id>\\d+) by (?<actor>${WHO})$`), key: () => 'logText.codeDeleted' },
  { re: new RegExp(`^Retried job (?<id>\\S+) \\((?<name>[^)]*)\\) by (?<actor>${WHO})$`), key: () => 'logText.jobRetried' },
  { re: /^Channel #(?<id>\d+) "(?<name>.*)" disabled automatically: (?<reason>[\s\S]*)$/, key: () => 'logText.channelDisabled' },
  { re: /^(?<what>Postgres|Redis) unreachable from (?<me>.+) since (?<since>\S+)$/, key: () => 'logText.unreachable' },
  { re: /^(?<what>Postgres|Redis) reachable again from (?<me>.+) after (?<s>\d+) s$/, key: () => 'logText.reachable' },
];

/** The row's sentence as a message key and its parts, or null for a sentence of no known shape. */
export function parseLogContent(content: string): LogText | null {
  for (const shape of SHAPES) {
    const m = shape.re.exec(content);
    if (!m) continue;
    const vars: Record<string, string> = {};
    for (const [k, v] of Object.entries(m.groups ?? {})) if (v !== undefined) vars[k] = v;
    const out: LogText = { key: shape.key(vars), vars };
    if (shape.changes) out.changes = vars.changes!.split(', ');
    return out;
  }
  return null;
}

/** A change's own words, and the rest of it ("1 → 10"); null when it is one to show as it is (a channel's field). */
export function parseChange(change: string): { key: ChangeKey; rest: string } | null {
  const whole: Record<string, ChangeKey> = {
    'display name changed': 'logChange.displayName',
    'email changed': 'logChange.email',
    'password set': 'logChange.password',
    'key replaced': 'logChange.key',
  };
  if (whole[change]) return { key: whole[change], rest: '' };
  const m = /^(username|role|status|group) (.+ → .+)$/.exec(change);
  if (!m) return null;
  const keys: Record<string, ChangeKey> = { username: 'logChange.username', role: 'logChange.role', status: 'logChange.status', group: 'logChange.group' };
  return { key: keys[m[1]!]!, rest: m[2]! };
}
