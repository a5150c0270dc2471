/**
 * Text from a file printed to a terminal: control characters (ESC sequences that recolour, move the cursor or set
 * the window title, bells, backspaces) are removed from every string of a value; newlines and tabs stay (pure).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters being removed
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

export function withoutControlChars(text: string): string {
  return text.replace(CONTROL, '');
}

/** A copy of a JSON value with `withoutControlChars` applied to every string, keys included. */
export function stripControlChars<T>(value: T): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return withoutControlChars(v);
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === 'object' && v !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        const key = withoutControlChars(k);
        // `__proto__` from JSON is an own key, never the prototype.
        Object.defineProperty(out, key, { value: walk(x), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    return v;
  };
  return walk(value) as T;
}
