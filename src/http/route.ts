// Routers whose routes carry their own OpenAPI description: `router.endpoint(spec, handler)` registers both,
// so an endpoint's method, path, auth, request and response schemas sit next to its handler.
import { Router } from '@koa/router';
import type { Middleware } from 'koa';
import { z } from 'zod';

export type Method = 'get' | 'post' | 'put' | 'delete';
/** Who may call: nobody in particular, any user, admins, an sk- key (/v1), admins with a session or Basic. */
export type Auth = 'none' | 'user' | 'admin' | 'apiKey' | 'adminBasic';
export type ResponseSpec = string | { description: string; schema?: z.ZodType };

export interface Endpoint {
  method: Method;
  /** Koa form (`/api/user/:id`); written as `{id}` in the document. */
  path: string;
  tag: string;
  summary: string;
  auth: Auth;
  body?: z.ZodType | 'text';
  query?: z.ZodObject;
  responses: Record<number, ResponseSpec>;
  /** Answers 202 with Prefer: respond-async or when SYNC_WAIT_MS runs out. */
  job?: boolean;
}

export interface RouteSpec extends Omit<Endpoint, 'method' | 'tag' | 'body' | 'query'> {
  /** More than one method: the same handler for each (msOauth2api takes GET and POST alike). */
  method: Method | Method[];
  body?: z.ZodType | 'text';
  query?: z.ZodObject;
  /** Parameters read from the query for GET and from the body otherwise. */
  params?: z.ZodObject;
  /** Defaults to the router's. */
  tag?: string;
}

export class ApiRouter extends Router {
  readonly endpoints: Endpoint[] = [];

  /** @param tag the OpenAPI tag of this router's endpoints (the area's name). */
  constructor(readonly tag: string) {
    super();
  }

  /** Registers a handler and its description. */
  endpoint(spec: RouteSpec, handler: Middleware): this {
    const { method, params, ...rest } = spec;
    for (const m of Array.isArray(method) ? method : [method]) {
      const io = params ? (m === 'get' ? { query: params } : { body: params }) : {};
      this.endpoints.push({ ...rest, ...io, method: m, tag: rest.tag ?? this.tag });
      this[m](spec.path, handler);
    }
    return this;
  }
}

/** A documented response with a body schema. */
export const ok = (description: string, schema?: z.ZodType): ResponseSpec => ({ description, schema });

// The error bodies of the three API shapes (src/http/errors.ts writes them).
export const plainError = z.object({ error: z.string() });
export const openaiError = z.object({ error: z.object({ message: z.string(), type: z.string(), param: z.string().nullable(), code: z.string().nullable() }) });
/** one-api's envelope, with `data` when given. */
export const envelopeOf = (data?: z.ZodType) => z.object({ success: z.boolean(), message: z.string(), ...(data ? { data } : {}) });
