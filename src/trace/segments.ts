/**
 * Cutting a trace's text into segments that can be parsed independently (in
 * parallel): each cut falls right after an event's closing brace, before the
 * ',' and '{' that open the next event. A cut that lands inside a string or a
 * nested value is caught afterwards: the parser of the segment before it does
 * not end between two events, and the caller falls back to one parser.
 */

/**
 * Index just after a `}` that is followed by `,` and a new event object, searching backwards from `before`; -1 if
 * none. On text, or on its UTF-8 bytes (the characters looked for are ASCII, which never occurs inside a multi-byte
 * character: a cut found in the bytes never splits one).
 */
export function findEventBoundary(text: string | Uint8Array, before: number): number {
  const at = typeof text === 'string' ? (j: number) => text.charCodeAt(j) : (j: number) => text[j] ?? -1;
  const lastBrace = typeof text === 'string' ? (from: number) => text.lastIndexOf('}', from) : (from: number) => text.lastIndexOf(125, from);
  let i = before >= 0 ? lastBrace(before) : -1;
  while (i >= 0) {
    let j = skipWs(at, i + 1);
    if (at(j) === 44 /* , */) {
      j = skipWs(at, j + 1);
      if (at(j) === 123 /* { */) {
        j = skipWs(at, j + 1);
        if (at(j) === 34 /* " */) return i + 1;
      }
    }
    // (A negative start would count from the end of a typed array.)
    i = i > 0 ? lastBrace(i - 1) : -1;
  }
  return -1;
}

function skipWs(at: (j: number) => number, j: number): number {
  for (;;) {
    const c = at(j);
    if (c === 32 || c === 10 || c === 13 || c === 9) j++;
    else return j;
  }
}

/** The integer microsecond of the first `"ts"` in a text, the origin every segment must share; null if none. */
export function firstTimestampUs(text: string): number | null {
  const m = /"ts"\s*:\s*"?(-?\d+)/.exec(text);
  return m ? Number(m[1]) : null;
}
