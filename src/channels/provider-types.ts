// The channel types there are, as the console's channel form needs them: each registered provider (providers/registry.ts)
// with its one-api number, label, default base URL, the settings of its `config` (and what kind of value each takes, read
// from the provider's own schema) and what it supports. Built from the registry: a provider added there is listed here.
import { z } from 'zod';
import { PROVIDERS } from './providers/registry.js';
import type { Provider } from './providers/types.js';

export const providerTypeView = z.object({
  type: z.string().describe("the channel's type"),
  one_api_type: z.number().nullable().describe("one-api's channel type number, where it has one"),
  label: z.string(),
  default_base_url: z.string().nullable().describe('used when a channel gives none; null: a channel must give one'),
  config_fields: z.array(
    z.object({
      name: z.string(),
      label: z.string(),
      required: z.boolean(),
      placeholder: z.string().nullable(),
      kind: z.enum(['text', 'number', 'boolean', 'json']).describe('the value it takes: json for an object or a list (written as JSON)'),
      choices: z.array(z.string()).nullable().describe('the values it may take, when it takes one of a few'),
    }),
  ),
  supports: z.object({
    dimensions: z.enum(['yes', 'no', 'some models']),
    base64: z.boolean(),
    token_arrays: z.boolean(),
    max_inputs: z.number().nullable().describe('inputs per upstream call (the relay splits larger ones); null: depends on the model'),
  }),
});
type ProviderTypeView = z.infer<typeof providerTypeView>;
type FieldKind = ProviderTypeView['config_fields'][number]['kind'];

interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
}

/** The JSON Schema of a provider's settings (as input); {} when its schema cannot be written as one. */
function configSchema(p: Provider): JsonSchema {
  try {
    return z.toJSONSchema(p.config, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  } catch {
    return {};
  }
}

function kindOf(s: JsonSchema | undefined): FieldKind {
  const type = Array.isArray(s?.type) ? s.type.filter((x) => x !== 'null')[0] : s?.type;
  if (type === 'number' || type === 'integer') return 'number';
  if (type === 'boolean') return 'boolean';
  if (type === 'object' || type === 'array') return 'json';
  return 'text';
}

function view(p: Provider): ProviderTypeView {
  const schema = configSchema(p);
  return {
    type: p.type,
    one_api_type: p.oneApiType,
    label: p.label,
    default_base_url: p.defaultBaseUrl,
    config_fields: p.configFields.map((f) => {
      const s = schema.properties?.[f.name];
      const choices = s?.enum?.every((v) => typeof v === 'string') ? (s.enum as string[]) : null;
      return {
        name: f.name,
        label: f.label,
        required: f.required ?? schema.required?.includes(f.name) ?? false,
        placeholder: f.placeholder ?? null,
        kind: kindOf(s),
        choices,
      };
    }),
    supports: {
      dimensions: typeof p.dimensions === 'function' ? 'some models' : p.dimensions ? 'yes' : 'no',
      base64: p.base64,
      token_arrays: p.tokenArrays ?? false,
      max_inputs: typeof p.maxInputs === 'number' ? p.maxInputs : null,
    },
  };
}

let views: ProviderTypeView[] | undefined;

/** Every registered provider, in the registry's order. */
export function providerTypes(): ProviderTypeView[] {
  views ??= PROVIDERS.map(view);
  return views;
}
