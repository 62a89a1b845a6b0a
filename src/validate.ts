// The one validation helper: parse with zod, or throw a 400 that names the field at fault.
import { z } from 'zod';
import { badRequest, type AppErrorOptions } from './errors.js';

export function describeIssue(issue: Pick<z.core.$ZodIssue, 'path' | 'message'>): string {
  const field = issue.path.map(String).join('.');
  return field ? `${field}: ${issue.message}` : issue.message;
}

export function parse<S extends z.ZodType>(schema: S, input: unknown, opts?: AppErrorOptions): z.output<S> {
  const result = schema.safeParse(input);
  let issue: Pick<z.core.$ZodIssue, 'path' | 'message'>;
  if (result.success) {
    // What passed the schema is still refused if it holds a NUL anywhere: it would reach Postgres. So is a key with a
    // NUL in what was sent, even where the schema drops that key: "no NUL characters" holds for the whole body.
    const nul = nulIssue(result.data) ?? nulIssue(input, true);
    if (!nul) return result.data;
    issue = nul;
  } else issue = result.error.issues[0]!;
  const param = issue.path.length ? issue.path.map(String).join('.') : (opts?.param ?? null);
  // A scalar (a path parameter) has no path of its own: name it by the param it came from.
  const message = !issue.path.length && param ? `${param}: ${issue.message}` : describeIssue(issue);
  throw badRequest(message, { ...opts, param });
}

/** Postgres refuses U+0000 in text (and in jsonb): a string that holds one is a 400, never a 500. */
export const NUL_MESSAGE = 'must not contain NUL (\\u0000) characters';

/**
 * The path of the first string (or object key) in `value` that holds U+0000; plain objects and arrays are walked.
 * `keysOnly`: object keys only (what a schema that drops unknown keys never sees).
 */
export function findNul(value: unknown, keysOnly = false): PropertyKey[] | undefined {
  if (typeof value === 'string') return !keysOnly && value.includes('\0') ? [] : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findNul(value[i], keysOnly);
      if (found) return [i, ...found];
    }
    return undefined;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return undefined; // Date, Buffer, ...: not text
  for (const [k, v] of Object.entries(value)) {
    if (k.includes('\0')) return [k.replaceAll('\0', '\\u0000')]; // named, not echoed: the message stays printable
    const found = findNul(v, keysOnly);
    if (found) return [k, ...found];
  }
  return undefined;
}

/** findNul as a zod-style issue (path and message), for callers that report issues. */
export function nulIssue(value: unknown, keysOnly = false): { path: PropertyKey[]; message: string } | undefined {
  const path = findNul(value, keysOnly);
  return path && { path, message: NUL_MESSAGE };
}

/** A string that is an absolute http(s) URL of at most `max` characters. */
export function httpUrl(max: number) {
  return z
    .string({ error: 'must be a string' })
    .max(max, `must be at most ${max} characters`)
    .refine((v) => {
      try {
        const u = new URL(v);
        return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
      } catch {
        return false;
      }
    }, 'must be an absolute http(s) URL');
}

/** The id of a row in a body (Postgres integer ids): `what` names it in the error. Past 2^31 − 1 is a 400, not a 500. */
export function rowId(what: string) {
  const message = `must be the ${what} id`;
  return z.number({ error: message }).int(message).positive(message).max(2_147_483_647, message);
}
