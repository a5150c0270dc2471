/**
 * Cutting a trace's text into segments that can be parsed independently (in
 * parallel): each cut falls right after an event's closing brace, before the
 * ',' and '{' that open the next event. A cut that lands inside a string or a
 * nested value is caught afterwards: the parser of the segment before it does
 * not end between two events, and the caller falls back to one parser.
 */

/** Index just after a `}` that is followed by `,` and a new event object, searching backwards from `before`; -1 if none. */
export function findEventBoundary(text: string, before: number): number {
  let i = text.lastIndexOf('}', before);
  while (i >= 0) {
    let j = i + 1;
    j = skipWs(text, j);
    if (text.charCodeAt(j) === 44 /* , */) {
      j = skipWs(text, j + 1);
      if (text.charCodeAt(j) === 123 /* { */) {
        j = skipWs(text, j + 1);
        if (text.charCodeAt(j) === 34 /* " */) return i + 1;
      }
    }
    i = text.lastIndexOf('}', i - 1);
  }
  return -1;
}

function skipWs(text: string, j: number): number {
  for (;;) {
    const c = text.charCodeAt(j);
    if (c === 32 || c === 10 || c === 13 || c === 9) j++;
    else return j;
  }
}

/** The integer microsecond of the first `"ts"` in a text, the origin every segment must share; null if none. */
export function firstTimestampUs(text: string): number | null {
  const m = /"ts"\s*:\s*"?(-?\d+)/.exec(text);
  return m ? Number(m[1]) : null;
}
