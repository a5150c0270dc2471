/**
 * Stage 5 of the doctor report, findings: every registered producer (producers.ts) run in the registry's order, each
 * after the producers it needs, and their findings ranked (findings/rank.ts: severity, then step saved, then memory
 * freed, then a defect before an advice of equal gain; equal ones in the registry's order).
 * In: the run, its pace and its what-ifs (`ProducerInput`). Out: the report's findings, each with its source.
 */
import type { Finding } from '../../findings/finding.js';
import { sortFindings } from '../../findings/rank.js';
import { type FindingProducer, type ProducerInput, type ProducerName, PRODUCERS } from '../producers.js';
import type { RankedFinding } from '../reportTypes.js';

/** The producers' findings, ranked. Throws when a producer is registered before one it needs. */
export function findingsOf(input: ProducerInput, producers: readonly FindingProducer[] = PRODUCERS): RankedFinding[] {
  const produced = new Map<ProducerName, Finding[]>();
  for (const p of producers) {
    const missing = p.needs.filter((n) => !produced.has(n));
    if (missing.length > 0) throw new Error(`finding producer ${p.name} needs ${missing.join(', ')}: register it after them`);
    const out = p.produce(input, (n) => produced.get(n) ?? []);
    for (const n of p.needs) produced.set(n, revisedBy(produced.get(n) ?? [], out.revised ?? []));
    produced.set(p.name, out.findings);
  }
  return sortFindings(producers.flatMap((p) => (produced.get(p.name) ?? []).map((f) => ({ ...f, source: p.source }))));
}

/** A needed producer's findings, each replaced by its amended version (same id) where there is one. */
function revisedBy(findings: readonly Finding[], revised: readonly Finding[]): Finding[] {
  return findings.map((f) => revised.find((r) => r.id === f.id) ?? f);
}
