// Routes declared with what they need: `endpoint(spec, handler)` carries an endpoint's method, path, auth, request and
// response schemas, and enforces them. Before the handler runs, the caller is authenticated and their role checked
// (spec.auth), the path parameters, query and body are parsed (spec.path params, query, body, params), and the handler
// is handed typed values: it never authorizes or parses for itself, so what is documented is what is enforced.
import { Router } from '@koa/router';
import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import type { Principal } from '../accounts/auth.js';
import { ROLE } from '../accounts/schema.js';
import type { Platform } from '../platform.js';
import { parse } from '../validate.js';
import { authorize, authorizeApiKey, checkSameOrigin, SESSION_COOKIE } from './auth.js';
import { IDEMPOTENCY_HEADER, idempotently } from './idempotency.js';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
/**
 * Who may call: nobody in particular, any user, admins, root, an sk- key (/v1), admins with a session or Basic.
 * A credential with a role below the endpoint's is 403; no credential 401.
 */
export type Auth = 'none' | 'user' | 'admin' | 'root' | 'apiKey' | 'adminBasic';
export type ResponseSpec = string | { description: string; schema?: z.ZodType };

/** One method and path as /openapi.json documents it. */
export interface Endpoint {
  method: Method;
  /** Koa form (`/api/user/:id`); written as `{id}` in the document. */
  path: string;
  tag: string;
  summary: string;
  auth: Auth;
  body?: z.ZodType | 'text' | 'multipart';
  query?: z.ZodObject;
  responses: Record<number, ResponseSpec>;
  /** Answers 202 with Prefer: respond-async or when SYNC_WAIT_MS runs out. */
  job?: boolean;
  /**
   * Creates a job or has a side effect: takes an `Idempotency-Key` (src/http/idempotency.ts), checked after auth and
   * parsing (a request refused by either keeps nothing), so the same request sent again answers what the first did.
   */
  idempotent?: boolean;
}

type PathSchemas = Record<string, z.ZodType>;

export interface RouteSpec extends Omit<Endpoint, 'method' | 'tag' | 'body' | 'query'> {
  /** More than one method: the same handler for each (msOauth2api takes GET and POST alike). */
  method: Method | Method[];
  /**
   * The JSON body (parsed with `parse`, an absent body read as `emptyBody`), 'text' (handed over as sent), or
   * 'multipart' (an upload: left unread for the handler to stream from ctx.req, documented as a file and a purpose).
   */
  body?: z.ZodType | 'text' | 'multipart';
  /** What an absent body is read as before `body` parses it (default `{}`). */
  emptyBody?: unknown;
  /**
   * Parses the body instead of `body` (which then only documents it), for areas whose errors are their own (OpenAI's
   * messages, content's field messages); gets the path parameters as sent (`/v1/engines/:model` names a model).
   */
  parseBody?: (raw: unknown, path: Record<string, string>) => unknown;
  query?: z.ZodObject;
  /** Parses the query instead of `query` (which then only documents it). */
  parseQuery?: (raw: Record<string, unknown>) => unknown;
  /** Path parameters, each parsed with its schema (a 400 naming it): `{ id: idParam }`. Others are handed over as strings. */
  pathParams?: PathSchemas;
  /**
   * Parameters taken from the query and the body alike (the body's win), whatever the method: msOauth2api's
   * operations. Documented as the query for GET and the body otherwise.
   */
  params?: z.ZodObject;
  /**
   * The parameter in which msOauth2api's clients send their protection password: when the request carries no
   * Authorization header and no session cookie, its value is taken as the access token or API key.
   */
  paramCredential?: string;
  /**
   * A GET that changes state (rotates a token, empties a mailbox, sends mail): the same-origin rule for cookie and
   * Basic credentials applies as it does to POST, PUT and DELETE.
   */
  changesState?: boolean;
  /** Same-origin whatever the credentials, for endpoints without auth that set or end a session (login, logout). */
  sameOrigin?: boolean;
  /** Defaults to the router's. */
  tag?: string;
}

type Out<S> = S extends z.ZodType ? z.output<S> : never;
type BodyOf<S extends RouteSpec> = S['parseBody'] extends (...a: never[]) => infer R
  ? R
  : S['body'] extends z.ZodType
    ? z.output<S['body']>
    : S['body'] extends 'text'
      ? unknown
      : undefined;
type QueryOf<S extends RouteSpec> = S['parseQuery'] extends (...a: never[]) => infer R ? R : S['query'] extends z.ZodObject ? z.output<S['query']> : undefined;
type PathOf<S extends RouteSpec> = Record<string, string> &
  (S['pathParams'] extends PathSchemas ? { [K in keyof S['pathParams']]: Out<S['pathParams'][K]> } : unknown);

/** What a handler is handed, checked: the caller (null where auth is 'none'), and the request's parsed parts. */
export interface Input<S extends RouteSpec> {
  p: Platform;
  principal: S['auth'] extends 'none' ? null : Principal;
  body: BodyOf<S>;
  query: QueryOf<S>;
  path: PathOf<S>;
  params: S['params'] extends z.ZodObject ? z.output<S['params']> : undefined;
}

/** Writes its answer on `ctx`, or returns the body (anything but undefined becomes ctx.body). */
export type Handler<S extends RouteSpec> = (ctx: Context, input: Input<S>) => unknown;

export interface Declared {
  spec: RouteSpec;
  handler: Handler<RouteSpec>;
}

/** Declares an endpoint: its spec and its handler (mounted by `ApiRouter.add`). */
export const endpoint = <const S extends RouteSpec>(spec: S, handler: Handler<S>): Declared => ({ spec, handler: handler as unknown as Handler<RouteSpec> });

/** The same endpoint, taking an Idempotency-Key (for declarations made by an area's helper). */
export const idempotent = (declared: Declared): Declared => ({ ...declared, spec: { ...declared.spec, idempotent: true } });

const MIN_ROLE: Record<'user' | 'admin' | 'root' | 'adminBasic', number> = { user: ROLE.common, admin: ROLE.admin, root: ROLE.root, adminBasic: ROLE.admin };

/** Authenticates the caller as `spec.auth` says. */
export async function enforceAuth(ctx: Context, p: Platform, spec: RouteSpec, raw: Record<string, unknown> | undefined): Promise<Principal | null> {
  if (spec.auth === 'none') {
    if (spec.sameOrigin) checkSameOrigin(ctx, p, true);
    return null;
  }
  if (spec.auth === 'apiKey') return authorizeApiKey(ctx, p);
  const credential = spec.paramCredential && raw?.[spec.paramCredential];
  if (typeof credential === 'string' && credential && !ctx.get('authorization') && !ctx.cookies.get(SESSION_COOKIE)) {
    ctx.request.headers.authorization = `Bearer ${credential}`;
  }
  return authorize(ctx, p, MIN_ROLE[spec.auth], { changesState: spec.changesState, allowBasic: spec.auth === 'adminBasic' });
}

/** msOauth2api reads GET parameters from the query and others from the body: take both, body wins. */
function queryAndBody(ctx: Context): Record<string, unknown> {
  const body = ctx.request.body;
  const fromBody = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  return { ...lastValues(ctx.query), ...fromBody };
}

/** A repeated query parameter counts once, as its last value. */
function lastValues(query: Context['query']): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(query)) out[k] = Array.isArray(v) ? v[v.length - 1] : v;
  return out;
}

/** The middleware of a declared endpoint: auth, then path parameters, params, query and body, then the handler. */
export function enforced(p: Platform, spec: RouteSpec, handler: Handler<RouteSpec>): Middleware {
  const pathSchemas = spec.pathParams && Object.entries(spec.pathParams);
  const mergesParams = spec.params !== undefined || spec.paramCredential !== undefined;
  const emptyBody = 'emptyBody' in spec ? spec.emptyBody : {};
  // Keys are per user: an endpoint without one has no owner for a key.
  if (spec.idempotent && spec.auth === 'none') throw new Error(`${spec.path}: idempotent endpoints need auth`);
  return async (ctx) => {
    const raw = mergesParams ? queryAndBody(ctx) : undefined;
    const principal = await enforceAuth(ctx, p, spec, raw);
    let path: Record<string, unknown> = ctx.params;
    if (pathSchemas) {
      path = { ...ctx.params };
      for (const [name, schema] of pathSchemas) path[name] = parse(schema, ctx.params[name], { param: name });
    }
    const params = spec.params ? parse(spec.params, raw) : undefined;
    const query = spec.parseQuery ? spec.parseQuery(ctx.query) : spec.query ? parse(spec.query, ctx.query) : undefined;
    const rawBody = ctx.request.body;
    const body = spec.parseBody
      ? spec.parseBody(rawBody, ctx.params as Record<string, string>)
      : spec.body && spec.body !== 'text' && spec.body !== 'multipart'
        ? parse(spec.body, rawBody ?? emptyBody)
        : rawBody;
    const input = { p, principal, body, query, path, params } as Input<RouteSpec>;
    // Without the header an idempotent endpoint costs nothing more (no Redis round trip).
    if (spec.idempotent && ctx.headers[IDEMPOTENCY_HEADER] !== undefined) {
      return idempotently(ctx, p, principal!, spec.paramCredential, () => answer(ctx, handler, input));
    }
    await answer(ctx, handler, input);
  };
}

async function answer(ctx: Context, handler: Handler<RouteSpec>, input: Input<RouteSpec>) {
  const body = await handler(ctx, input);
  if (body !== undefined) ctx.body = body;
}

export class ApiRouter extends Router {
  readonly endpoints: Endpoint[] = [];

  /** @param tag the OpenAPI tag of this router's endpoints (the area's name). */
  constructor(
    readonly tag: string,
    readonly platform: Platform,
  ) {
    super();
  }

  /** Mounts declared endpoints: each is documented and enforced as its spec says. */
  add(...declared: Declared[]): this {
    for (const { spec, handler } of declared) this.mount(spec, enforced(this.platform, spec, handler));
    return this;
  }

  private mount(spec: RouteSpec, middleware: Middleware): this {
    const {
      method,
      params,
      parseBody: _b,
      parseQuery: _q,
      pathParams: _pp,
      emptyBody: _e,
      paramCredential: _c,
      changesState: _s,
      sameOrigin: _o,
      ...rest
    } = spec;
    for (const m of Array.isArray(method) ? method : [method]) {
      const io = params ? (m === 'get' ? { query: params } : { body: params }) : {};
      this.endpoints.push({ ...rest, ...io, method: m, tag: rest.tag ?? this.tag });
      this[m](spec.path, middleware);
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
