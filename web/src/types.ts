// The shapes the documented APIs answer with (see /openapi.json), as the console reads them.
// Written out here on purpose rather than imported from the server's schemas and row types (src/**/schema.ts): those
// modules import zod and other server code, and web/ is built and type-checked on its own (browser types only, no
// Node), so the console's bundle never carries server code. The API's JSON is the contract between the two.

export const ROLE = { common: 1, admin: 10, root: 100 } as const;

/** What every page gets: the parameters of its path (`/mail/:email`). */
export interface PageProps {
  params: Record<string, string>;
}

export interface User {
  id: number;
  username: string;
  display_name: string;
  role: number;
  status: number;
  email: string;
  quota: number;
  used_quota: number;
  request_count: number;
  group: string;
  created_at: string;
}

export interface Token {
  id: number;
  user_id: number;
  key: string;
  name: string;
  status: number;
  created_time: number;
  accessed_time: number;
  expired_time: number;
  remain_quota: number;
  unlimited_quota: boolean;
  used_quota: number;
  models: string;
  subnet: string;
}

export interface Redemption {
  id: number;
  user_id: number | null;
  key: string;
  name: string;
  quota: number;
  status: number;
  created_time: number;
  redeemed_time: number;
  used_user_id: number | null;
}

export interface Channel {
  id: number;
  type: string;
  name: string;
  base_url: string;
  key: string;
  models: string;
  model_mapping: Record<string, string>;
  priority: number;
  weight: number;
  price: number | null;
  status: number;
  status_reason: string | null;
  used_quota: number;
  created_time: number;
  updated_time: number;
}

export interface LogRow {
  id: number;
  created_at: number;
  type: number;
  content: string;
  username: string;
  token_name: string;
  model_name: string;
  quota: number;
  prompt_tokens: number;
  completion_tokens: number;
  channel: number;
  elapsed_time: number;
  request_id: string;
  request_count: number;
  cache_hit: boolean;
  status_code: number | null;
}

export interface LogStat {
  quota: number;
  rpm: number;
  tpm: number;
}

export interface DashboardRow {
  Day: string;
  ModelName: string;
  RequestCount: number;
  Quota: number;
  PromptTokens: number;
  CompletionTokens: number;
}

export interface Status {
  version: string;
  start_time: number;
  system_name: string;
  quota_unit: string;
  log_retention_days: number;
}

export interface ContentItem {
  id: string;
  source: string;
  url: string;
  title: string | null;
  summary: string;
  content: string;
  score: number;
  analyzedBy: string | null;
  analyzedAt: string;
  createdAt: string;
  updatedAt: string;
}

export interface ContentStats {
  total: number;
  bySource: Record<string, number>;
}

export interface MailServer {
  host: string;
  port: number;
  secure: boolean;
}

export interface MailAccount {
  id: number;
  owner_id: number;
  email: string;
  auth_type: 'password' | 'oauth2';
  client_id: string | null;
  imap: MailServer;
  smtp: MailServer;
  last_error: string | null;
  last_used_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface MailAddress {
  name: string;
  address: string;
}

export interface MailMessage {
  id: string;
  uid: number;
  mailbox: 'INBOX' | 'Junk';
  messageId: string | null;
  from: MailAddress | null;
  to: MailAddress[];
  subject: string;
  date: string | null;
  text: string | null;
  html: string | null;
  send: string | null;
  snippet?: string;
}

/** extract-code's answer (none found is a 404 with code no_code). */
export interface CodeAnswer {
  email: string;
  code: string;
  message: { id: string; mailbox: 'INBOX' | 'Junk'; from: MailAddress | null; subject: string; date: string | null };
  source: 'subject' | 'text' | 'html';
  keyword: string;
}

export type JobState = 'waiting' | 'active' | 'delayed' | 'completed' | 'failed';

export interface JobError {
  status: number;
  message: string;
  code?: string | null;
}

export interface Job {
  id: string;
  queue: string;
  name: string;
  state: JobState;
  progress: unknown;
  result?: unknown;
  error: JobError | null;
  attempts: number;
  createdAt: string;
  processedAt: string | null;
  finishedAt: string | null;
  statusUrl?: string;
}

/** What a job-backed endpoint answers with 202. */
export interface Accepted {
  jobId: string;
  state: JobState;
  statusUrl: string;
}

export interface Model {
  id: string;
  object: string;
  owned_by?: string;
}
