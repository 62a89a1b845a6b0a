// The one validation helper: parse with zod, or throw a 400 that names the field at fault.
import { z } from 'zod';
import { badRequest, type AppErrorOptions } from './errors.js';

export function describeIssue(issue: z.core.$ZodIssue): string {
  const field = issue.path.map(String).join('.');
  return field ? `${field}: ${issue.message}` : issue.message;
}

export function parse<S extends z.ZodType>(schema: S, input: unknown, opts?: AppErrorOptions): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const param = issue.path.length ? issue.path.map(String).join('.') : (opts?.param ?? null);
  // A scalar (a path parameter) has no path of its own: name it by the param it came from.
  const message = !issue.path.length && param ? `${param}: ${issue.message}` : describeIssue(issue);
  throw badRequest(message, { ...opts, param });
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
