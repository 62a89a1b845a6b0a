// Every channel as routing needs it, re-read from Postgres every few seconds, per process; and who may use which.
import type { Db } from '../db.js';
import { ROLE } from '../accounts/schema.js';
import { DEFAULT_GROUP } from '../groups.js';
import { rolesOfUsers, type Viewer } from '../accounts/store.js';
import { CHANNEL_STATUS, type ChannelRow } from './schema.js';
import { addChannelUsage } from './store.js';

/** A channel, ready for routing decisions. */
export interface ChannelEntry {
  id: number;
  /** Its provider (src/channels/providers/registry.ts). */
  type: string;
  /** Its provider's settings. */
  config: Record<string, unknown>;
  /** The user groups it serves. */
  groups: Set<string>;
  name: string;
  baseUrl: string;
  keyEnc: string;
  models: Set<string>;
  mapping: Record<string, string>;
  priority: number;
  weight: number;
  price: number | null;
  status: number;
  /** Who made it, with their role as last read; null: root's (made by root, before makers were recorded, or its maker was deleted). */
  maker: { id: number; role: number } | null;
}

/** Who a call is routed for: the user (the role rule, serves()) and their group (the channels serving it). */
export interface Caller extends Viewer {
  group: string;
}

/**
 * The role rule, the one place it is decided: a channel serves its maker and the users below its maker's role; root's
 * channels (and those without a maker) serve everyone. An admin's channel must never see root's texts, answer root's
 * vectors or set root's price. `null`: a caller not known (only the channels that serve everyone).
 */
export function serves(channel: ChannelEntry, caller: Viewer | null): boolean {
  const maker = channel.maker;
  if (maker === null || maker.role >= ROLE.root) return true;
  return caller !== null && (maker.id === caller.id || maker.role > caller.role);
}

/**
 * The group rule: a caller's calls take only the channels that serve their group (a caller not known: the default
 * group's). A group chooses channels and a price, not who may be given whose answers: the cache stays shared across
 * groups (servesEveryone is the role rule's).
 */
export const servesGroup = (channel: ChannelEntry, caller: Caller | null): boolean => channel.groups.has(caller?.group ?? DEFAULT_GROUP);

/** Whether any caller may be given this channel's answers (so they may be kept in the shared cache). */
export const servesEveryone = (channel: ChannelEntry) => serves(channel, null);

/** Failed writes in a row after which a channel's unwritten usage is dropped. */
const MAX_FLUSH_FAILURES = 10;

export type ModelAvailability = { kind: 'unknown' } | { kind: 'no-channel' } | { kind: 'no-price' } | { kind: 'ok'; price: number; channels: ChannelEntry[] };

/**
 * Every channel, re-read from Postgres at most every `ttlMs`. Changes made through this process
 * apply at once (invalidate()); changes made elsewhere within ttlMs.
 */
export class ChannelDirectory {
  private cache?: { at: number; entries: ChannelEntry[] };
  private loading?: Promise<ChannelEntry[]>;

  constructor(
    private readonly db: Db,
    private readonly ttlMs = 2_000,
    /** Told when a background flush fails (the sums are kept for the next one). */
    private readonly onFlushError: (err: unknown) => void = () => {},
  ) {}

  invalidate() {
    this.cache = undefined;
  }

  // Quota spent through each channel, added up here and written once a second: one UPDATE per call on
  // the same channels row would make every relayed call wait its turn for that row (and for a commit).
  private spent = new Map<number, number>();
  private readonly failures = new Map<number, number>();
  private spendTimer?: NodeJS.Timeout;

  /** Adds quota spent through a channel to its used_quota (within a second, or at flushUsage). */
  recordUsage(id: number, quota: number): void {
    if (quota <= 0) return;
    this.spent.set(id, (this.spent.get(id) ?? 0) + quota);
    this.spendTimer ??= setTimeout(() => void this.flushUsage().catch(this.onFlushError), 1_000).unref();
  }

  async flushUsage(): Promise<void> {
    clearTimeout(this.spendTimer);
    this.spendTimer = undefined;
    const spent = this.spent;
    this.spent = new Map();
    let failed: unknown;
    for (const [id, quota] of spent) {
      try {
        await addChannelUsage(this.db, id, quota);
        this.failures.delete(id);
      } catch (err) {
        failed ??= err;
        // Kept for the next flush (the database may be back by then), but not for ever: a sum that cannot be
        // written ten times running (one past bigint, say) is dropped, and the error says so.
        const n = (this.failures.get(id) ?? 0) + 1;
        if (n < MAX_FLUSH_FAILURES) {
          this.failures.set(id, n);
          this.recordUsage(id, quota);
        } else {
          this.failures.delete(id);
          failed = new Error(`channel ${id}: ${quota} quota of used_quota dropped after ${n} failed writes (${(err as Error).message})`);
        }
      }
    }
    if (failed) throw failed;
  }

  async all(): Promise<ChannelEntry[]> {
    if (this.cache && Date.now() - this.cache.at < this.ttlMs) return this.cache.entries;
    this.loading ??= this.db<ChannelRow>('channels')
      .select('*')
      .then(async (rows) => {
        // The makers' roles, read with the channels (every ttlMs, not per call): a promotion or demotion applies within ttlMs.
        const makers = [...new Set(rows.flatMap((r) => (r.created_by === null ? [] : [r.created_by])))];
        const roles = makers.length ? await rolesOfUsers(this.db, makers) : new Map<number, number>();
        const entries = rows.map((r) => ({
          id: r.id,
          type: r.type,
          config: JSON.parse(r.config) as Record<string, unknown>,
          groups: new Set(r.group.split(',')),
          name: r.name,
          baseUrl: r.base_url,
          keyEnc: r.key_enc,
          models: new Set(r.models.split(',')),
          mapping: JSON.parse(r.model_mapping) as Record<string, string>,
          priority: r.priority,
          weight: r.weight,
          price: r.price,
          status: r.status,
          // A maker deleted between the two reads (created_by is about to be null): serves no one until the next read.
          maker: r.created_by === null ? null : { id: r.created_by, role: roles.get(r.created_by) ?? -1 },
        }));
        this.cache = { at: Date.now(), entries };
        return entries;
      })
      .finally(() => (this.loading = undefined));
    return this.loading;
  }

  /** The channels `caller` may use (the role rule, serves(), and the group rule, servesGroup()), enabled or not. */
  async usableBy(caller: Caller | null): Promise<ChannelEntry[]> {
    return (await this.all()).filter((c) => serves(c, caller) && servesGroup(c, caller));
  }

  /**
   * Whether a model can be served to `caller`, over the channels it may use only: unknown (none of them lists it, as
   * for a model nobody serves), no-channel (all of them are disabled), no-price (none of the enabled ones has a
   * price: it is refused, never given away), or ok with its price (the highest among them) and the channels to try.
   */
  async availability(model: string, caller: Caller | null): Promise<ModelAvailability> {
    const listing = (await this.usableBy(caller)).filter((c) => c.models.has(model));
    if (listing.length === 0) return { kind: 'unknown' };
    const enabled = listing.filter((c) => c.status === CHANNEL_STATUS.enabled);
    if (enabled.length === 0) return { kind: 'no-channel' };
    const priced = enabled.filter((c) => c.price !== null);
    if (priced.length === 0) return { kind: 'no-price' };
    return { kind: 'ok', price: Math.max(...priced.map((c) => c.price!)), channels: priced };
  }

  /** Models that an enabled, priced channel `caller` may use serves. */
  async servedModels(caller: Caller | null): Promise<string[]> {
    const out = new Set<string>();
    for (const c of await this.usableBy(caller)) if (c.status === CHANNEL_STATUS.enabled && c.price !== null) for (const m of c.models) out.add(m);
    return [...out].sort();
  }
}
