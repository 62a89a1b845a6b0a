// User groups (one-api's `group`): a user is in one, a channel serves a set of them, each has a price ratio (GROUP_RATIO).
// Shared by accounts, channels, embeddings and the settings; imports nothing, so any of them may use it.

/** The group of a user or a channel without one set: the channels serving it, and its price ratio (1 unless GROUP_RATIO says). */
export const DEFAULT_GROUP = 'default';

/** A group's name, as users, channels and GROUP_RATIO spell it: 1-64 letters, digits, "_", "." or "-". */
export const GROUP_NAME = /^[\p{L}\p{N}_.-]{1,64}$/u;
