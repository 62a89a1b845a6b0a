// When the standard OTEL_* variables turn traces on, and how (src/telemetry.ts traceSettings; docs/operations.md#traces).
import { describe, expect, it } from 'vitest';
import { TraceConfigError, traceSettings } from '../../src/telemetry.js';

const ENDPOINT = 'http://collector:4318';

describe('traceSettings', () => {
  it('is off with no variables, and on (OTLP, protobuf) as soon as an endpoint is set', () => {
    expect(traceSettings({})).toBeUndefined();
    expect(traceSettings({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toBeUndefined();
    expect(traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT })).toEqual({ exporters: ['otlp'], protocol: 'http/protobuf' });
    expect(traceSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${ENDPOINT}/v1/traces` })).toEqual({ exporters: ['otlp'], protocol: 'http/protobuf' });
  });

  it('OTEL_TRACES_EXPORTER names the exporters (on without an endpoint); none turns traces off', () => {
    expect(traceSettings({ OTEL_TRACES_EXPORTER: 'otlp' })).toEqual({ exporters: ['otlp'], protocol: 'http/protobuf' });
    expect(traceSettings({ OTEL_TRACES_EXPORTER: 'console' })?.exporters).toEqual(['console']);
    expect(traceSettings({ OTEL_TRACES_EXPORTER: ' OTLP , console,otlp' })?.exporters).toEqual(['otlp', 'console']);
    expect(traceSettings({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT })).toBeUndefined();
  });

  it('OTEL_SDK_DISABLED=true turns traces off whatever else is set', () => {
    expect(traceSettings({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT })).toBeUndefined();
    expect(traceSettings({ OTEL_SDK_DISABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT })?.exporters).toEqual(['otlp']);
  });

  it('takes http/json or http/protobuf (the traces variable first), and refuses grpc or an unknown exporter naming the variable', () => {
    expect(traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })?.protocol).toBe('http/json');
    expect(
      traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' })
        ?.protocol,
    ).toBe('http/protobuf');
    expect(() => traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(TraceConfigError);
    expect(() => traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' })).toThrow(
      /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc" is not supported/,
    );
    expect(() => traceSettings({ OTEL_TRACES_EXPORTER: 'jaeger' })).toThrow(/OTEL_TRACES_EXPORTER: "jaeger"/);
  });
});
