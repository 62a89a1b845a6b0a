// Self-hosted servers (Ollama, TEI) that take a key only when their operator set one: a channel's key is required, so a
// channel of a server without one holds NO_KEY, and its calls carry no Authorization header.

/**
 * The channel key that means "this server takes no key". One word, not a character such as "-": the relay cuts the
 * channel's key out of every upstream message it passes on (not NO_KEY: see isNoKey), so a one-character key would
 * mangle them.
 */
export const NO_KEY = 'none';

/** Whether a channel's key is NO_KEY (in any case): no key at all, nothing to send or to cut out of messages. */
export const isNoKey = (key: string): boolean => key.trim().toLowerCase() === NO_KEY;

/** `Authorization: Bearer <key>` for a channel's key; no header for NO_KEY (in any case). */
export const bearerUnlessNoKey = (key: string): Record<string, string> => (isNoKey(key) ? {} : { authorization: `Bearer ${key}` });
