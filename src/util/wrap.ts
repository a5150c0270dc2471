/**
 * Wrapping prose to the terminal's width: every report's long lines (evidence, advice) break at spaces, and the
 * continuation lines keep the indent of the first. Code, tables and bars are not wrapped (callers skip them). Pure.
 */

/** `line` broken into lines of at most `width` columns (a word longer than that stays whole); indent kept. */
export function wrapLine(line: string, width: number, hangingIndent = 0): string[] {
  if (!(width > 0) || line.length <= width) return [line];
  const indent = /^\s*/.exec(line)![0];
  const next = ' '.repeat(indent.length + hangingIndent);
  const words = line.slice(indent.length).split(' ');
  const out: string[] = [];
  let cur = indent;
  let curHasWord = false;
  for (const w of words) {
    if (curHasWord && cur.length + 1 + w.length > width) {
      out.push(cur);
      cur = next + w;
    } else {
      cur = curHasWord ? `${cur} ${w}` : cur + w;
    }
    curHasWord = true;
  }
  out.push(cur);
  return out;
}

/** Every line of `text` wrapped (see wrapLine). */
export function wrapText(text: string, width: number, hangingIndent = 0): string {
  return text
    .split('\n')
    .flatMap((l) => wrapLine(l, width, hangingIndent))
    .join('\n');
}
