// The shapes the documented APIs answer with, as the console reads them: named here, generated in api.gen.ts from the
// server's OpenAPI document (/openapi.json, built from the response schemas in src/**/schema.ts) by
// `npm run gen:web-types`. A server schema that changes without them being generated again fails the unit tests
// (test/unit/web-types.test.ts). web/ never imports server code: it is built and type-checked on its own (browser types
// only), and the API's JSON is the contract between the two.
import type { paths } from './api.gen';

/** The JSON body of an endpoint's answer with a status (200 unless named): `Answer<'/api/status', 'get'>`. */
type Answer<P extends keyof paths, M extends 'get' | 'post' | 'put' | 'delete', S extends number = 200> = Named<
  paths[P][M] extends { responses: { [K in S]: { content: { 'application/json': infer B } } } } ? B : never
>;
/** An answer not in the document (path, method or status wrong, or documented without a schema) shows up by name where it is used. */
type Named<T> = [T] extends [never] ? 'not a JSON answer in api.gen.ts' : T;

export const ROLE = { common: 1, admin: 10, root: 100 } as const;

/** What every page gets: the parameters of its path (`/mail/:email`). */
export interface PageProps {
  params: Record<string, string>;
}

export type User = Answer<'/api/user/self', 'get'>['data'];
export type Token = Answer<'/api/token/', 'get'>['data'][number];
export type Redemption = Answer<'/api/redemption/', 'get'>['data'][number];
export type Channel = Answer<'/api/channel/', 'get'>['data'][number];
/** A channel type (a registered provider) with its settings and what it supports. */
export type ChannelType = Answer<'/api/channel/types', 'get'>['data'][number];

export type LogRow = Answer<'/api/log/', 'get'>['data'][number];
export type LogStat = Answer<'/api/log/stat', 'get'>['data'];
export type DashboardRow = Answer<'/api/user/dashboard', 'get'>['data'][number];
export type Status = Answer<'/api/status', 'get'>['data'];

/** An item as listed; one read alone (its page) also says whether the caller may delete it. */
export type ContentItem = Answer<'/api/content/{id}', 'get'>;
export type ContentStats = Answer<'/api/stats', 'get'>;

export type MailAccount = Answer<'/api/mail/accounts', 'get'>[number];
export type MailServer = MailAccount['imap'];
export type MailMessage = Answer<'/api/mail-all', 'get'>['messages'][number];
export type MailAddress = NonNullable<MailMessage['from']>;
/** extract-code's answer (none found is a 404 with code no_code). */
export type CodeAnswer = Answer<'/api/vendor-email/extract-code', 'get'>;

/** A job with its result (GET /api/jobs/{id}, and the `state` event of its event stream). */
export type Job = Answer<'/api/jobs/{id}', 'get'>;
/** A page of jobs (GET /api/jobs). */
export type JobPage = Answer<'/api/jobs', 'get'>;

export type Schedule = Answer<'/api/schedules', 'get'>[number];
/** A webhook endpoint; as created or rotated, with its secret (shown that once). */
export type WebhookEndpoint = Answer<'/api/webhooks', 'get'>[number];
export type WebhookWithSecret = Answer<'/api/webhooks', 'post', 201>;
export type WebhookDelivery = Answer<'/api/webhooks/{id}/deliveries', 'get'>[number];
/** A job in a listing: no result, and where to read it. */
export type JobSummary = JobPage['jobs'][number];
export type JobState = Job['state'];
export type JobError = NonNullable<Job['error']>;
/** What a job-backed endpoint answers with 202. */
export type Accepted = Answer<'/api/content/batch', 'post', 202>;

/**
 * OpenAI's model object. Written out until /v1/models documents its answer: the schema is src/embeddings/schema.ts's
 * modelListView, which src/embeddings/routes.ts has yet to name; then this becomes Answer<'/v1/models', 'get'>['data'][number].
 */
export type Model = Answer<'/v1/models', 'get'>['data'][number];

/** OpenAI's batch object (the Batch API for /v1/embeddings), and a page of them (GET /v1/batches). */
export type BatchPage = Answer<'/v1/batches', 'get'>;
export type Batch = BatchPage['data'][number];
export type BatchStatus = Batch['status'];
/** OpenAI's file object (POST /v1/files). */
export type FileObject = Answer<'/v1/files/{id}', 'get'>;
