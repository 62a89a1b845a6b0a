// Every provider a channel can be, by its type name and by one-api's type number. Add a provider here, one line each.
import { openai } from './openai.js';
import { azure } from './azure.js';
import { gemini } from './gemini.js';
import { cohere } from './cohere.js';
import { voyage } from './voyage.js';
import { bedrock } from './bedrock.js';
import { ollama } from './ollama.js';
import { tei } from './tei.js';
// providers: imports above this line
import type { Provider } from './types.js';

export const PROVIDERS: readonly Provider[] = [
  openai,
  azure,
  gemini,
  cohere,
  voyage,
  bedrock,
  ollama,
  tei,
  // providers: entries above this line
];

const byName = new Map(PROVIDERS.map((p) => [p.type, p]));
const byNumber = new Map(PROVIDERS.flatMap((p) => (p.oneApiType === null ? [] : [[p.oneApiType, p] as const])));

/** The provider of a channel type (a name, or one-api's number); undefined for one not supported. */
export function providerOf(type: string | number): Provider | undefined {
  return typeof type === 'number' ? byNumber.get(type) : byName.get(type);
}

/** The provider of a stored channel: its type is always a registered name (checked when it was saved). */
export function providerFor(type: string): Provider {
  const p = byName.get(type);
  if (!p) throw new Error(`channel type '${type}' has no provider`);
  return p;
}
