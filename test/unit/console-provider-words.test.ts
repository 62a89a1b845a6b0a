// The console's channel form speaks both languages for every provider: the English words are the registry's own (each
// provider's label and its settings' labels, served by GET /api/channel/types), the Chinese ones are in
// web/src/messages/zh-cn-providers.ts, by type and by type.setting. A provider added without them fails here.
import { describe, expect, it } from 'vitest';
import { PROVIDERS } from '../../src/channels/providers/registry.js';
import { zhCNProviders } from '../../web/src/messages/zh-cn-providers.js';

describe('the channel form in Chinese', () => {
  for (const p of PROVIDERS) {
    it(`has ${p.type}'s label and each of its settings' labels in Chinese`, () => {
      const missing = [p.type, ...p.configFields.map((f) => `${p.type}.${f.name}`)].filter((k) => !zhCNProviders[k]?.trim());
      expect(missing, 'add these to web/src/messages/zh-cn-providers.ts').toEqual([]);
    });
  }
});
