// The OpenTelemetry SDK, loaded by src/telemetry.ts only when traces are on: the tracer provider (sampler, limits and
// batching from the standard OTEL_* variables), the OTLP/HTTP exporter, the instrumentations of ioredis, pg and fetch,
// BullMQ's telemetry, and the spans Switchyard makes itself (requests, outgoing HTTP, IMAP/SMTP, webhooks).
import type { ClientRequest, IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Link, type Span } from '@opentelemetry/api';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { detectResources, envDetector, hostDetector, processDetector, resourceFromAttributes, serviceInstanceIdDetector } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  NodeTracerProvider,
  type ReadableSpan,
  type Span as SdkSpan,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import type { Telemetry, Span as BullSpan, SpanOptions as BullSpanOptions } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';
import type { SpanAttributes, SpanHandle, TraceSettings, Tracing } from './telemetry-types.js';

const TRACER = 'switchyard';

const kinds = { internal: SpanKind.INTERNAL, client: SpanKind.CLIENT, server: SpanKind.SERVER } as const;

function clean(attributes: SpanAttributes): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(attributes)) if (v !== undefined) out[k] = v;
  return out;
}

/** An error as a span shows it: its code or name, never its message (a server's answer may be quoted there). */
function failed(span: Span, err?: unknown) {
  const e = err as { code?: unknown; name?: unknown } | undefined;
  const type = typeof e?.code === 'string' ? e.code : typeof e?.name === 'string' ? e.name : undefined;
  span.setStatus({ code: SpanStatusCode.ERROR });
  if (type) span.setAttribute('error.type', type);
}

function handle(span: Span): SpanHandle {
  return {
    set: (a) => span.setAttributes(clean(a)),
    rename: (name) => span.updateName(name),
    fail: (err) => failed(span, err),
  };
}

async function within<T>(span: Span, ctx: Context, fn: (s: SpanHandle) => Promise<T>): Promise<T> {
  try {
    return await context.with(trace.setSpan(ctx, span), () => fn(handle(span)));
  } catch (err) {
    failed(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Attributes that may hold what a URL's query carries (keys, tokens): kept without the query. */
const URL_KEYS = ['url.full', 'http.url', 'http.target', 'url.original'];

/**
 * The last line of defence, run as each span ends: URLs lose their query string (a credential may ride there, as in
 * msOauth2api's `?password=`) and a query attribute is dropped whole.
 */
const scrubber: SpanProcessor = {
  onStart() {},
  onEnding(span: SdkSpan) {
    const attrs = span.attributes as Record<string, unknown>;
    for (const k of URL_KEYS) {
      const v = attrs[k];
      if (typeof v === 'string' && v.includes('?')) attrs[k] = v.slice(0, v.indexOf('?'));
    }
    delete attrs['url.query'];
  },
  onEnd(_span: ReadableSpan) {},
  forceFlush: async () => {},
  shutdown: async () => {},
};

/** BullMQ's span attributes that could carry a job's result (a mail, vectors, a code): never recorded. */
const BULL_UNSAFE = new Set(['bullmq.job.result']);
const bullSafe = (a: Record<string, unknown>): Attributes => {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(a)) if (!BULL_UNSAFE.has(k) && v !== undefined) out[k] = v as Attributes[string];
  return out;
};

/**
 * bullmq-otel, with two changes: BullMQ's background loops (fetching the next job, the stalled-jobs check, a Queue's
 * upkeep) make no spans unless they run inside a traced operation, so a trace is a request or a job and not the
 * worker's idle polling; and a job's result is never put on a span (BullMQ records it on the job's completion event).
 */
function bullmqTelemetry(): Telemetry {
  const base = new BullMQOtel({ tracerName: 'bullmq' });
  const quiet: BullSpan = { setSpanOnContext: (c) => c, setAttribute() {}, setAttributes() {}, addEvent() {}, recordException() {}, end() {} };
  return {
    contextManager: {
      with: (ctx, fn) => base.contextManager.with(ctx, fn),
      active: () => base.contextManager.active(),
      root: () => ROOT_CONTEXT,
      getMetadata: (ctx) => base.contextManager.getMetadata(ctx),
      fromMetadata: (active, metadata) => base.contextManager.fromMetadata(active, metadata),
    },
    tracer: {
      startSpan(name: string, options?: BullSpanOptions, ctx?: Context): BullSpan {
        if ((options?.kind ?? 0) === SpanKind.INTERNAL && !trace.getSpan(ctx ?? context.active())) return quiet;
        const span = base.tracer.startSpan(name, options, ctx);
        return {
          setSpanOnContext: (c) => span.setSpanOnContext(c),
          setAttribute: (k, v) => void (BULL_UNSAFE.has(k) || span.setAttribute(k, v)),
          setAttributes: (a) => span.setAttributes(bullSafe(a)),
          addEvent: (n, a) => span.addEvent(n, a && bullSafe(a)),
          recordException: (e, t) => span.recordException(e, t),
          end: () => span.end(),
        };
      },
    },
  };
}

async function otlpExporter(protocol: TraceSettings['protocol']): Promise<SpanExporter> {
  // Each reads its endpoint, headers, timeout and compression from the OTEL_EXPORTER_OTLP_* variables.
  if (protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
}

export async function startSdk(processName: string, settings: TraceSettings): Promise<Tracing> {
  const exporters: SpanExporter[] = [];
  for (const name of settings.exporters) exporters.push(name === 'otlp' ? await otlpExporter(settings.protocol) : new ConsoleSpanExporter());
  // service.name defaults to switchyard; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (envDetector) override it.
  const resource = resourceFromAttributes({ 'service.name': 'switchyard', 'switchyard.process': processName }).merge(
    detectResources({ detectors: [envDetector, processDetector, hostDetector, serviceInstanceIdDetector] }),
  );
  // The sampler (OTEL_TRACES_SAMPLER, default parentbased_always_on), limits and batching (OTEL_BSP_*) come from the environment.
  const provider = new NodeTracerProvider({ resource, spanProcessors: [scrubber, ...exporters.map((e) => new BatchSpanProcessor(e))] });
  provider.register();
  const disable = registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      // Only inside a request's or a job's trace: idle connections (BullMQ's blocking reads, pub/sub) make no traces.
      // A command's arguments (job data, cached values, keys holding ids) are not recorded: its name only.
      new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
      // SQL text with its placeholders; the values bound to them are not recorded (enhancedDatabaseReporting off).
      new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
      // fetch() (Microsoft's token endpoint); no headers recorded, and the scrubber drops URLs' queries.
      new UndiciInstrumentation({ requireParentforSpans: true }),
    ],
  });
  // ioredis and pg were loaded (by src/redis.ts, src/db.ts) before this ran: requiring them again lets their
  // instrumentations patch the classes everything already holds.
  const require = createRequire(import.meta.url);
  require('ioredis');
  require('pg');
  const tracer = provider.getTracer(TRACER);

  return {
    span(name, attributes, fn, options = {}) {
      const parent = (options.parent as Context | undefined) ?? context.active();
      const links: Link[] = [];
      for (const l of options.links ?? []) {
        const sc = trace.getSpanContext(l as Context);
        if (sc) links.push({ context: sc });
      }
      const span = tracer.startSpan(name, { kind: kinds[options.kind ?? 'internal'], attributes: clean(attributes), links }, parent);
      return within(span, parent, fn);
    },
    serve(headers, name, attributes, fn) {
      const parent = propagation.extract(ROOT_CONTEXT, headers as IncomingHttpHeaders);
      const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes: clean(attributes) }, parent);
      return within(span, parent, fn);
    },
    outgoing(request: ClientRequest, target: URL, method: string) {
      const secure = target.protocol === 'https:';
      const span = tracer.startSpan(method, {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': method,
          'server.address': target.hostname,
          'server.port': Number(target.port) || (secure ? 443 : 80),
          'url.scheme': secure ? 'https' : 'http',
          'url.path': target.pathname,
        },
      });
      let ended = false;
      let answered = false;
      const end = (err?: unknown) => {
        if (ended) return;
        ended = true;
        if (err) failed(span, err);
        span.end();
      };
      request.once('response', (res) => {
        answered = true;
        span.setAttribute('http.response.status_code', res.statusCode ?? 0);
        if ((res.statusCode ?? 0) >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        res.once('end', () => end());
        res.once('close', () => end());
      });
      request.once('error', (err) => end(err));
      request.once('close', () => {
        if (!answered) end();
      });
    },
    capture: () => context.active(),
    bullmq: bullmqTelemetry(),
    async shutdown() {
      disable();
      await provider.shutdown();
    },
  };
}
