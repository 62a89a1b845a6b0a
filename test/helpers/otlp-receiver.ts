// An OTLP/HTTP trace receiver on loopback, as a collector would be: POST /v1/traces in protobuf (application/x-protobuf)
// or JSON (application/json), each decoded into spans with their resource. Protobuf is read with a small decoder of
// the wire format, for the fields of opentelemetry-proto's trace.proto and common.proto that the tests look at.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type AttrValue = string | number | boolean | null | AttrValue[] | { [k: string]: AttrValue };

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client, 4 producer, 5 consumer (OTLP's numbering). */
  kind: number;
  attributes: Record<string, AttrValue>;
  events: { name: string; attributes: Record<string, AttrValue> }[];
  links: { traceId: string; spanId: string; attributes: Record<string, AttrValue> }[];
  /** 0 unset, 1 ok, 2 error. */
  status: number;
  resource: Record<string, AttrValue>;
  /** How it came: 'protobuf' or 'json'. */
  encoding: 'protobuf' | 'json';
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** Every request body as it arrived (for scans of the raw bytes). */
  bodies: Buffer[];
  /** Content types seen. */
  contentTypes: Set<string>;
  close(): Promise<void>;
}

// ---- protobuf wire format -------------------------------------------------------------------------

type Field = { no: number; wire: number; value: bigint | Buffer };

function* fields(buf: Buffer): Generator<Field> {
  let i = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const tag = Number(varint());
    const no = tag >>> 3;
    const wire = tag & 7;
    if (wire === 0) yield { no, wire, value: varint() };
    else if (wire === 1) {
      yield { no, wire, value: buf.subarray(i, i + 8) };
      i += 8;
    } else if (wire === 2) {
      const len = Number(varint());
      yield { no, wire, value: buf.subarray(i, i + len) };
      i += len;
    } else if (wire === 5) {
      yield { no, wire, value: buf.subarray(i, i + 4) };
      i += 4;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
}

const str = (v: bigint | Buffer) => (v as Buffer).toString('utf8');
const hex = (v: bigint | Buffer) => (v as Buffer).toString('hex');

function anyValue(buf: Buffer): AttrValue {
  for (const f of fields(buf)) {
    if (f.no === 1) return str(f.value);
    if (f.no === 2) return f.value !== 0n;
    if (f.no === 3) return Number(BigInt.asIntN(64, f.value as bigint));
    if (f.no === 4) return (f.value as Buffer).readDoubleLE(0);
    if (f.no === 5) return [...fields(f.value as Buffer)].filter((x) => x.no === 1).map((x) => anyValue(x.value as Buffer));
    if (f.no === 6) return keyValues([...fields(f.value as Buffer)].filter((x) => x.no === 1).map((x) => x.value as Buffer));
    if (f.no === 7) return hex(f.value);
  }
  return null;
}

function keyValues(list: Buffer[]): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const kv of list) {
    let key = '';
    let value: AttrValue = null;
    for (const f of fields(kv)) {
      if (f.no === 1) key = str(f.value);
      if (f.no === 2) value = anyValue(f.value as Buffer);
    }
    out[key] = value;
  }
  return out;
}

function decodeProtobuf(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of fields(body)) {
    if (rs.no !== 1) continue;
    let resource: Record<string, AttrValue> = {};
    const scopeSpans: Buffer[] = [];
    for (const f of fields(rs.value as Buffer)) {
      if (f.no === 1) resource = keyValues([...fields(f.value as Buffer)].filter((x) => x.no === 1).map((x) => x.value as Buffer));
      if (f.no === 2) scopeSpans.push(f.value as Buffer);
    }
    for (const ss of scopeSpans) {
      for (const sf of fields(ss)) {
        if (sf.no !== 2) continue;
        const span: ReceivedSpan = {
          traceId: '',
          spanId: '',
          parentSpanId: '',
          name: '',
          kind: 0,
          attributes: {},
          events: [],
          links: [],
          status: 0,
          resource,
          encoding: 'protobuf',
        };
        const attrs: Buffer[] = [];
        for (const f of fields(sf.value as Buffer)) {
          if (f.no === 1) span.traceId = hex(f.value);
          else if (f.no === 2) span.spanId = hex(f.value);
          else if (f.no === 4) span.parentSpanId = hex(f.value);
          else if (f.no === 5) span.name = str(f.value);
          else if (f.no === 6) span.kind = Number(f.value);
          else if (f.no === 9) attrs.push(f.value as Buffer);
          else if (f.no === 11) {
            const e = { name: '', attributes: {} as Record<string, AttrValue> };
            const ea: Buffer[] = [];
            for (const x of fields(f.value as Buffer)) {
              if (x.no === 2) e.name = str(x.value);
              if (x.no === 3) ea.push(x.value as Buffer);
            }
            e.attributes = keyValues(ea);
            span.events.push(e);
          } else if (f.no === 13) {
            const l = { traceId: '', spanId: '', attributes: {} as Record<string, AttrValue> };
            const la: Buffer[] = [];
            for (const x of fields(f.value as Buffer)) {
              if (x.no === 1) l.traceId = hex(x.value);
              if (x.no === 2) l.spanId = hex(x.value);
              if (x.no === 4) la.push(x.value as Buffer);
            }
            l.attributes = keyValues(la);
            span.links.push(l);
          } else if (f.no === 15) {
            for (const x of fields(f.value as Buffer)) if (x.no === 3) span.status = Number(x.value);
          }
        }
        span.attributes = keyValues(attrs);
        spans.push(span);
      }
    }
  }
  return spans;
}

// ---- JSON ------------------------------------------------------------------------------------------

type JsonValue = {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  bytesValue?: string;
  arrayValue?: { values?: JsonValue[] };
  kvlistValue?: { values?: JsonKv[] };
};
type JsonKv = { key: string; value?: JsonValue };

function jsonValue(v: JsonValue | undefined): AttrValue {
  if (!v) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.bytesValue !== undefined) return v.bytesValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(jsonValue);
  if (v.kvlistValue) return jsonAttrs(v.kvlistValue.values);
  return null;
}

function jsonAttrs(list: JsonKv[] | undefined): Record<string, AttrValue> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, jsonValue(kv.value)]));
}

// OTLP/JSON carries ids as hex; the JS exporter may also send base64: either is read as hex here.
const jsonId = (id: string | undefined) => (!id ? '' : /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex'));

function decodeJson(body: Buffer): ReceivedSpan[] {
  const doc = JSON.parse(body.toString('utf8')) as {
    resourceSpans?: {
      resource?: { attributes?: JsonKv[] };
      scopeSpans?: {
        spans?: {
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          kind?: number;
          attributes?: JsonKv[];
          events?: { name: string; attributes?: JsonKv[] }[];
          links?: { traceId: string; spanId: string; attributes?: JsonKv[] }[];
          status?: { code?: number };
        }[];
      }[];
    }[];
  };
  const out: ReceivedSpan[] = [];
  for (const rs of doc.resourceSpans ?? []) {
    const resource = jsonAttrs(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? [])
      for (const s of ss.spans ?? [])
        out.push({
          traceId: jsonId(s.traceId),
          spanId: jsonId(s.spanId),
          parentSpanId: jsonId(s.parentSpanId),
          name: s.name,
          kind: s.kind ?? 0,
          attributes: jsonAttrs(s.attributes),
          events: (s.events ?? []).map((e) => ({ name: e.name, attributes: jsonAttrs(e.attributes) })),
          links: (s.links ?? []).map((l) => ({ traceId: jsonId(l.traceId), spanId: jsonId(l.spanId), attributes: jsonAttrs(l.attributes) })),
          status: s.status?.code ?? 0,
          resource,
          encoding: 'json',
        });
  }
  return out;
}

/** Starts the receiver; point OTEL_EXPORTER_OTLP_ENDPOINT at `url`. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: Buffer[] = [];
  const contentTypes = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      try {
        bodies.push(body);
        contentTypes.add(type);
        if (type === 'application/x-protobuf') {
          spans.push(...decodeProtobuf(body));
          res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        } else if (type === 'application/json') {
          spans.push(...decodeJson(body));
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        } else res.writeHead(415).end();
      } catch (err) {
        res.writeHead(400).end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    bodies,
    contentTypes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
