// The shapes shared by src/telemetry.ts (loaded always) and src/telemetry-sdk.ts (loaded when traces are on).
import type { ClientRequest, IncomingHttpHeaders } from 'node:http';
import type { Telemetry } from 'bullmq';

/** What a span may carry: counts, ids, names and addresses; never a credential, a text or a mail. */
export type SpanAttributes = Record<string, string | number | boolean | undefined>;

export interface SpanHandle {
  set(attributes: SpanAttributes): void;
  rename(name: string): void;
  /** Marks the span failed, with the error's name or code (never its message, which may quote a server). */
  fail(err?: unknown): void;
}

export interface SpanOptions {
  kind?: 'internal' | 'client' | 'server';
  /** The parent, from capture(); the active context when not given. */
  parent?: unknown;
  /** Other traces this work belongs to as well, from capture(). */
  links?: unknown[];
}

/** The tracing of a process, when on (implemented by src/telemetry-sdk.ts). */
export interface Tracing {
  /** Runs `fn` in a new span, a child of the active one (or of `options.parent`); it ends when `fn` settles. */
  span<T>(name: string, attributes: SpanAttributes, fn: (span: SpanHandle) => Promise<T>, options?: SpanOptions): Promise<T>;
  /** A request's server span, continuing the trace its `traceparent` header names, if any. */
  serve<T>(headers: IncomingHttpHeaders, name: string, attributes: SpanAttributes, fn: (span: SpanHandle) => Promise<T>): Promise<T>;
  /** A client span for an outgoing node:http request, ended with its answer or its error. Names host, port and path only. */
  outgoing(request: ClientRequest, target: URL, method: string): void;
  /** The active context, for work that runs later on behalf of this caller (see SpanOptions). */
  capture(): unknown;
  /** BullMQ's telemetry option: queues put the trace context in each job, workers continue it. */
  bullmq: Telemetry;
  /** Sends what is buffered and stops. */
  shutdown(): Promise<void>;
}

export type TraceProtocol = 'http/protobuf' | 'http/json';

export interface TraceSettings {
  exporters: ('otlp' | 'console')[];
  protocol: TraceProtocol;
}
