/**
 * Compares strings by Unicode code point, which is the order of their UTF-8 bytes. Python's `sorted` and Rust's `str`
 * ordering use it; JavaScript's `<` compares UTF-16 code units, which differs for characters above U+FFFF versus
 * U+E000–U+FFFF. Anything that must sort names the way the Hugging Face tools do, or deterministically across
 * platforms, uses this.
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(i);
    if (ca === cb) continue;
    // Only surrogates (0xD800–0xDFFF) are out of code point order against 0xE000–0xFFFF; lift them above.
    const ka = ca >= 0xd800 && ca <= 0xdfff ? ca + 0x10000 : ca;
    const kb = cb >= 0xd800 && cb <= 0xdfff ? cb + 0x10000 : cb;
    return ka - kb;
  }
  return a.length - b.length;
}
