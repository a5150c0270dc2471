/**
 * Close matches for a mistyped word: did-you-mean for flags, GPU names and
 * anything else a user types from a known list. Pure.
 */

/** Edit distance (insertions, deletions, substitutions, adjacent swaps), case-insensitive. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const d: number[][] = Array.from({ length: s.length + 1 }, (_, i) => [i, ...new Array<number>(t.length).fill(0)]);
  for (let j = 1; j <= t.length; j++) d[0]![j] = j;
  for (let i = 1; i <= s.length; i++) {
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[s.length]![t.length]!;
}

/**
 * The candidates closest to `word`, best first: those within a third of the word's length in edits, or those that
 * start with it or contain it (a prefix or a fragment typed). At most `limit`.
 */
export function closeMatches(word: string, candidates: readonly string[], limit = 3): string[] {
  const w = word.toLowerCase();
  // Tokens that name a model (h100, 4090, a100, 40gb): a long name typed as printed still finds its entry.
  const tokens = (t: string) => t.toLowerCase().split(/[^a-z0-9]+/).filter((x) => x.length >= 3 && /\d/.test(x));
  const wordTokens = tokens(word);
  const scored: { c: string; score: number }[] = [];
  for (const c of new Set(candidates)) {
    const lc = c.toLowerCase();
    const dist = editDistance(w, lc);
    const budget = Math.max(1, Math.floor(Math.max(w.length, 3) / 3));
    if (dist <= budget) scored.push({ c, score: dist });
    else if (w.length >= 2 && (lc.startsWith(w) || w.startsWith(lc))) scored.push({ c, score: budget + 1 });
    else if (w.length >= 3 && lc.includes(w)) scored.push({ c, score: budget + 2 });
    else if (tokens(c).some((t) => wordTokens.some((x) => x === t || x.includes(t) || t.includes(x)))) scored.push({ c, score: budget + 3 });
  }
  return scored
    .sort((a, b) => a.score - b.score || a.c.length - b.c.length || a.c.localeCompare(b.c))
    .slice(0, limit)
    .map((s) => s.c);
}
