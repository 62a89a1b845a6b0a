// What makes two content urls the same item (no imports: migration 013 uses it too).

/**
 * The url as WHATWG URL writes it (scheme and host lower-cased, an international host in punycode, a default port
 * dropped, an empty path as `/`), without its fragment. An item keeps its url as first sent; this is only compared.
 */
export function urlKey(url: string): string {
  const u = new URL(url);
  u.hash = '';
  return u.href;
}
