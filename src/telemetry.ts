// Traces (OpenTelemetry), off unless the standard OTEL_* variables ask for them (docs/operations.md#traces).
// Off, nothing of OpenTelemetry is loaded: tracing() is undefined and inSpan() is a plain call. On, the entry point's
// runProcess loads ./telemetry-sdk.js before the platform connects to anything.
import type { SpanAttributes, SpanHandle, TraceSettings, Tracing } from './telemetry-types.js';

export type { SpanAttributes, SpanHandle, SpanOptions, TraceSettings, Tracing } from './telemetry-types.js';

/** An OTEL_* value Switchyard cannot honour: the process stops with this message, which names the variable. */
export class TraceConfigError extends Error {}

let current: Tracing | undefined;

/** The process's tracing, or undefined when traces are off (the default). */
export const tracing = (): Tracing | undefined => current;

/** `fn` in a span when traces are on (handed the span, to add what it learns); just `fn()` when off. */
export function inSpan<T>(name: string, attributes: SpanAttributes, fn: (span?: SpanHandle) => Promise<T>): Promise<T> {
  return current ? current.span(name, attributes, fn) : fn();
}

const truthy = (v: string | undefined) => v?.trim().toLowerCase() === 'true';

/**
 * Whether the standard variables ask for traces, and how to send them; undefined when they do not. On when
 * OTEL_TRACES_EXPORTER names an exporter, or, unset, when an OTLP endpoint is set; off with OTEL_SDK_DISABLED=true or
 * OTEL_TRACES_EXPORTER=none. Throws TraceConfigError naming the variable for a value Switchyard cannot honour.
 */
export function traceSettings(env: NodeJS.ProcessEnv = process.env): TraceSettings | undefined {
  if (truthy(env.OTEL_SDK_DISABLED)) return undefined;
  const listed = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((x) => x.trim().toLowerCase())
    .filter(Boolean);
  const unknown = listed.filter((x) => !['otlp', 'console', 'none'].includes(x));
  if (unknown.length) throw new TraceConfigError(`invalid configuration: OTEL_TRACES_EXPORTER: "${unknown.join(',')}" is not one of otlp, console, none`);
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const exporters = listed.length ? listed.filter((x) => x !== 'none') : endpoint ? ['otlp'] : [];
  if (exporters.length === 0 || listed.includes('none')) return undefined;
  const variable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = (env[variable] || 'http/protobuf').trim().toLowerCase();
  if (protocol !== 'http/protobuf' && protocol !== 'http/json')
    throw new TraceConfigError(`invalid configuration: ${variable}: "${protocol}" is not supported (use http/protobuf or http/json)`);
  return { exporters: [...new Set(exporters)] as TraceSettings['exporters'], protocol };
}

/**
 * Starts tracing for this process when the environment asks for it (loading the SDK and its instrumentations), and
 * does nothing otherwise. Call before anything connects to Postgres or Redis. Returns the settings in use, if on.
 */
export async function startTracing(processName: string, env: NodeJS.ProcessEnv = process.env): Promise<TraceSettings | undefined> {
  const settings = traceSettings(env);
  if (!settings || current) return settings;
  const sdk = await import('./telemetry-sdk.js');
  current = await sdk.startSdk(processName, settings);
  return settings;
}

/** Sends the spans still buffered and stops tracing (at shutdown). */
export async function stopTracing(): Promise<void> {
  const t = current;
  current = undefined;
  await t?.shutdown();
}
