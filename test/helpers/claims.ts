/** What a finding's own figures contradict in its claims (test/advice/claims.test.ts), in words; empty when nothing. */
import type { Finding } from '../../src/findings/finding.js';

const SHARE = /(\d+(?:\.\d+)?)% of (?:the|each) step/g;
const RATE_PAIR = /at ([\d.]+) TFLOP\/s vs ([\d.]+) TFLOP\/s/;

/** What is wrong with a finding's claims, in words; empty when nothing. */
export function contradictions(f: Finding): string[] {
  const out: string[] = [];
  const titleShares = [...f.title.matchAll(SHARE)].map((m) => m[1]);
  const evidenceShares = new Set(f.evidence.flatMap((e) => [...e.matchAll(SHARE)].map((m) => m[1])));
  for (const s of titleShares)
    if (evidenceShares.size > 0 && !evidenceShares.has(s))
      out.push(`${f.id}: the title says ${s}% of the step, the evidence ${[...evidenceShares].join('%, ')}%`);
  if (/\bslow(er)?\b/i.test(f.title))
    for (const e of f.evidence) {
      const m = RATE_PAIR.exec(e);
      if (m && !(Number(m[1]) < Number(m[2]))) out.push(`${f.id}: called slower, but ${m[1]} TFLOP/s is not below ${m[2]}: ${e}`);
    }
  return out;
}

