// Channels as admins manage them: listed and read as the role rule lets them, made and changed with their base_url
// vetted by the outbound policy, each change in the admin log (the key never, only that it was replaced), and the
// routing directory told. No HTTP here: callers hand over what they parsed (src/channels/routes.ts) and get data
// back, or an AppError.
import type { z } from 'zod';
import type { Platform } from '../platform.js';
import type { AuthUser } from '../accounts/auth.js';
import { type PageQuery, pageOf } from '../accounts/schema.js';
import { badRequest, notFound } from '../errors.js';
import { adminActionEntry, describeChanges } from '../logs/entries.js';
import { insertLogs } from '../logs/store.js';
import { refusedHostField } from '../outbound.js';
import { type createChannelBody, publicChannel, type updateChannelBody } from './schema.js';
import { providerFor } from './providers/registry.js';
import type { Provider } from './providers/types.js';
import * as store from './store.js';

const NOT_FOUND = 'Channel not found';

/** The outbound policy's save-time check of a base_url's host (src/outbound.ts): 400 naming base_url. */
async function vetBaseUrl(p: Platform, baseUrl: string): Promise<void> {
  const refused = await refusedHostField(p.config.OUTBOUND_ALLOWLIST, { base_url: new URL(baseUrl).hostname });
  if (refused) throw badRequest(refused.message, { param: 'base_url' });
}

/** A channel's config checked against its provider's settings: 400 naming config and the setting. */
function checkConfig(provider: Provider, config: Record<string, unknown>): Record<string, unknown> {
  const r = provider.config.safeParse(config);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const where = issue.path.length ? `config.${issue.path.join('.')}` : 'config';
  throw badRequest(
    `${where}: ${issue.code === 'unrecognized_keys' ? `${provider.label} has no setting ${issue.keys.map((k) => `'${k}'`).join(', ')}` : issue.message}`,
    {
      param: 'config',
    },
  );
}

/** A key the provider says cannot be its own (its shape): 400 naming key, never quoting it. */
function checkKey(provider: Provider, key: string): void {
  const problem = provider.keyProblem?.(key);
  if (problem) throw badRequest(`key: for ${provider.label}, ${problem.replace(/^its key /, 'the key ')}`, { param: 'key' });
}

/** A base URL given as '' (or not at all): the provider's own; one without its own needs it. */
function baseUrlFor(provider: Provider, given: string | undefined): string {
  if (given) return given;
  if (provider.defaultBaseUrl) return provider.defaultBaseUrl;
  throw badRequest(`base_url: a ${provider.label} channel needs its base_url`, { param: 'base_url' });
}

/** A page of the channels the admin sees (keys as hints), and how many there are in all. */
export async function listChannels(p: Platform, admin: AuthUser, page: PageQuery) {
  const { rows, total } = await store.listChannels(p.db, admin, pageOf(page));
  return { channels: rows.map(publicChannel), total };
}

/** One channel the admin sees (404 otherwise). */
export async function getChannel(p: Platform, admin: AuthUser, id: number) {
  const row = await store.getChannel(p.db, admin, id);
  if (!row) throw notFound(NOT_FOUND);
  return publicChannel(row);
}

/** A new channel, the admin's: its base_url vetted, its key encrypted; the log says what was made, never the key. */
export async function createChannel(p: Platform, admin: AuthUser, input: z.output<typeof createChannelBody>) {
  const provider = providerFor(input.type);
  const base_url = baseUrlFor(provider, input.base_url);
  const config = checkConfig(provider, input.config);
  checkKey(provider, input.key);
  await vetBaseUrl(p, base_url);
  const row = await store.createChannel(p.db, p.secrets, { ...input, base_url, config }, admin.id);
  p.channels.invalidate();
  await insertLogs(p.db, [adminActionEntry(admin, `Created channel #${row.id} "${row.name}" (${row.base_url}, models ${row.models})`, { channelId: row.id })]);
  return publicChannel(row);
}

/** Which fields a change logs; the key only as "replaced". */
const LOGGED_FIELDS = ['type', 'name', 'base_url', 'config', 'group', 'models', 'model_mapping', 'priority', 'weight', 'price', 'status', 'key_hint'] as const;

/**
 * Changes a channel the admin sees (404 otherwise). A new base_url needs the key again (else the stored key would be
 * sent to a host of the caller's choosing) and is vetted; the log lists the fields changed.
 */
export async function updateChannel(p: Platform, admin: AuthUser, input: z.output<typeof updateChannelBody>) {
  const current = await store.getChannel(p.db, admin, input.id);
  if (input.type !== undefined || input.config !== undefined || input.base_url !== undefined) {
    if (!current) throw notFound(NOT_FOUND);
    // A new type is checked with its settings (given, or kept); a base_url of '' is the provider's own.
    const provider = providerFor(input.type ?? current.type);
    if (input.type !== undefined || input.config !== undefined)
      input = { ...input, config: checkConfig(provider, input.config ?? (JSON.parse(current.config) as Record<string, unknown>)) };
    if (input.base_url !== undefined) input = { ...input, base_url: baseUrlFor(provider, input.base_url) };
  }
  // A new key is checked against the channel's provider (the new type's when that changes too).
  if (input.key) {
    const type = input.type ?? current?.type;
    if (type) checkKey(providerFor(type), input.key);
  }
  if (input.base_url !== undefined) {
    if (!current) throw notFound(NOT_FOUND);
    if (input.base_url !== current.base_url && !input.key) {
      throw badRequest("base_url: changing a channel's base_url needs its key again (send key)", { param: 'base_url' });
    }
    await vetBaseUrl(p, input.base_url);
  }
  const row = await store.updateChannel(p.db, p.secrets, admin, input);
  if (!row) throw notFound(NOT_FOUND);
  p.channels.invalidate();
  const changes = current ? describeChanges(current, row, [...LOGGED_FIELDS], ['key_hint']).map((c) => c.replace('key_hint changed', 'key replaced')) : [];
  if (changes.length)
    await insertLogs(p.db, [adminActionEntry(admin, `Changed channel #${row.id} "${row.name}": ${changes.join(', ')}`, { channelId: row.id })]);
  return publicChannel(row);
}

/** Deletes a channel the admin sees (404 otherwise), in the admin log. */
export async function deleteChannel(p: Platform, admin: AuthUser, id: number): Promise<void> {
  if (!(await store.deleteChannel(p.db, admin, id))) throw notFound(NOT_FOUND);
  p.channels.invalidate();
  await insertLogs(p.db, [adminActionEntry(admin, `Deleted channel #${id}`, { channelId: id })]);
}
