/**
 * `gpuwise plan` as text: the terminal report (a plan, a search, or a plan that does not fit with what would) and
 * its Markdown form. Pure: takes the `--json` object (report.ts), returns strings.
 */
import { fmtInt, fmtGiB, fmtGpuMemory } from '../util/format.js';
import type { PlanJson } from './report.js';
import { sequenceText } from './setup.js';


export function layoutText(j: Pick<PlanJson, 'parallelism' | 'setup'>): string {
  const p = j.parallelism;
  const parts = [p.dp === 'none' ? 'single replica' : `${p.dp} x${p.dpSize}`];
  if (p.tp > 1) parts.push(`tp ${p.tp}`);
  if (p.pp > 1) parts.push(`pp ${p.pp}`);
  if ((p.dp === 'fsdp' || p.dp === 'hsdp') && !p.reshardAfterForward) parts.push('no reshard');
  if (p.cpuOffload) parts.push('offload');
  parts.push(`mb ${j.setup.microBatch}`, `accum ${j.setup.gradAccum}`, `ckpt ${j.setup.checkpointing}`);
  return parts.join(', ');
}

/** Where the model's description came from, in words ("config shipped with gpuwise (openai-community/gpt2)"). */
export function modelSourceText(j: PlanJson): string | null {
  const s = j.model.source;
  if (!s) return null;
  if (s.kind === 'shipped') return `config shipped with gpuwise (${s.hubId}'s published config.json; none in the Hugging Face cache)`;
  if (s.kind === 'hf-cache') return `config of ${s.hubId} from the Hugging Face cache (${s.path})`;
  return `config ${s.path}`;
}

/**
 * "1 x 8 NVIDIA H200 141GB (catalogue entry, 139.8 GiB each)": the entry's name carries the memory it is sold with,
 * the figure beside it is the one reports give for the GPU (util/format.ts fmtGpuMemory).
 */
export function hardwareText(j: Pick<PlanJson, 'hardware'>): string {
  const h = j.hardware;
  return `${h.nodes} x ${h.gpusPerNode} ${h.gpu.name} (catalogue entry, ${fmtGpuMemory(h.gpu.memoryBytes)} each)`;
}

/** "train amp-bf16, adamw, seq 1024" (an encoder-decoder's "source 512, target 128"): the run, as every report heads it. */
export function runText(j: Pick<PlanJson, 'setup'>): string {
  return `${j.setup.mode} ${j.setup.precision}, ${j.setup.optimizer}, ${sequenceText(j.setup)}`;
}

function headLines(j: PlanJson): string[] {
  const source = modelSourceText(j);
  const lines = [
    `${j.model.name}: ${j.model.architecture}, ${fmtInt(j.model.params)} parameters${source ? `; ${source}` : ''}`,
    `${hardwareText(j)}; ${runText(j)}; ${layoutText(j)}; global batch ${j.globalBatch}`,
  ];
  if (j.assumed?.length) lines.push(`assumed (not given): ${j.assumed.join('; ')}`);
  return lines;
}

/** "headroom 0.31 GiB to max_memory_reserved (1.06 GiB to max_memory_allocated)": both peaks, reserved first (issue 47). */
export function headroomText(m: PlanJson['memory']): string {
  const side = (b: number) => (b >= 0 ? `${fmtGiB(b, 2)}` : `short by ${fmtGiB(-b, 2)}`);
  const alloc = m.headroomAllocatedBytes;
  const head = m.headroomBytes >= 0 ? `headroom ${fmtGiB(m.headroomBytes, 2)} to max_memory_reserved` : `max_memory_reserved over it by ${fmtGiB(-m.headroomBytes, 2)}`;
  return `${head} (${side(alloc)} to max_memory_allocated)`;
}

function memoryLines(j: PlanJson): string[] {
  const m = j.memory;
  return [
    `Memory per GPU (binding phase: ${m.bindingPhase})`,
    ...m.components.map((c) => `  ${c.label.padEnd(22)} ${fmtGiB(c.bytes, 2).padStart(12)}  ${c.note}`),
    `  ${'max_memory_allocated'.padEnd(22)} ${fmtGiB(m.peakAllocatedBytes, 2).padStart(12)}  forward ${fmtGiB(m.phases.forwardBytes, 2)}, backward ${fmtGiB(m.phases.backwardBytes, 2)}, optimizer ${fmtGiB(m.phases.optimizerBytes, 2)}`,
    `  ${'max_memory_reserved'.padEnd(22)} ${fmtGiB(m.peakReservedBytes, 2).padStart(12)}`,
    `  ${'nvidia-smi'.padEnd(22)} ${fmtGiB(m.deviceUsedBytes, 2).padStart(12)}`,
    `  ${'budget'.padEnd(22)} ${fmtGiB(m.budgetBytes, 2).padStart(12)}  ${headroomText(m)}`,
  ];
}

/** The plan: what it is, its memory by component and phase, its step time, and the memory savers. */
export function renderPlan(j: PlanJson): string {
  const lines = [...headLines(j), ''];
  if (j.wouldFit) lines.push(`DOES NOT FIT: ${j.wouldFit.explanation}`, '');
  lines.push(...memoryLines(j));
  if (j.wouldFit) {
    lines.push('', 'What would fit');
    if (j.wouldFit.maxMicroBatch > 0) lines.push(`  --batch ${j.wouldFit.maxMicroBatch} (the largest micro-batch that fits this set-up)`);
    for (const c of j.wouldFit.changes) lines.push(`  ${c}`);
    if (j.wouldFit.maxMicroBatch === 0 && j.wouldFit.changes.length === 0) lines.push('  nothing with these GPUs: add GPUs or use a larger card');
    return `${lines.join('\n')}\n`;
  }
  if (j.maxBatch) lines.push('', `Largest micro-batch that fits: ${j.maxBatch.microBatch} (peak ${fmtGiB(j.maxBatch.peakAllocatedBytes ?? 0, 2)} of ${fmtGiB(j.maxBatch.budgetBytes, 2)})`);
  const t = j.time;
  lines.push(
    '',
    `Step time ${j.stepTimeMs.toFixed(1)} ms (${t.bindingTerm}-bound): compute ${t.computeMs.toFixed(1)}, memory-bound ${t.memoryBoundMs.toFixed(1)}, cpu floor ${t.cpuFloorMs.toFixed(1)}, exposed comm ${t.exposedCommMs.toFixed(1)} of ${t.commMs.toFixed(1)}, bubble ${t.bubbleMs.toFixed(1)} ms`,
    `  ${fmtInt(t.tokensPerSec)} tokens/s, MFU ${(t.mfu * 100).toFixed(0)}%; overlap: ${t.overlap}`,
  );
  if (j.savers.length > 0) {
    lines.push('', 'Top memory savers');
    for (const sv of j.savers) lines.push(`  ${sv.change.padEnd(34)} -${fmtGiB(sv.savedBytes, 2)}  step ${sv.stepTimeDeltaMs >= 0 ? '+' : ''}${sv.stepTimeDeltaMs.toFixed(1)} ms`);
  }
  if (j.faster?.length) {
    lines.push('', 'Faster layouts that fit');
    for (const f of j.faster) lines.push(`  ${fasterText(j, f).padEnd(34)}`.trimEnd());
  }
  return `${lines.join('\n')}\n`;
}

/** "--strategy hsdp  step 430.0 ms (-84%), peak 17.80 GiB": a faster layout against the plan's step. */
function fasterText(j: PlanJson, f: NonNullable<PlanJson['faster']>[number]): string {
  return `${f.change.padEnd(34)} step ${f.stepTimeMs.toFixed(1)} ms (${((f.stepTimeMs / j.stepTimeMs - 1) * 100).toFixed(0)}%), peak ${fmtGiB(f.peakAllocatedBytes, 2)}`;
}

/** Why a search's first plan is first, in one line: the fastest, or the simplest of those tied with the fastest. */
export function searchChoiceText(j: PlanJson): string | null {
  const c = j.search?.choice;
  const best = j.search?.plans[0];
  if (!c || !best) return null;
  const within = `${Math.round(c.tolerance * 100)}%`;
  if (c.tiedPlans <= 1) return `chosen: ${layoutText(best)}: the fastest predicted; no other layout within ${within}`;
  const others = `${c.tiedPlans - 1} other${c.tiedPlans > 2 ? 's' : ''}`;
  const faster = c.fastest.tokensPerSec / best.tokensPerSec - 1;
  if (c.fastest.rank === best.rank) return `chosen: ${layoutText(best)}: ties within ${within} with ${others}; the fastest and the simplest of them`;
  const fastest = `the fastest, #${c.fastest.rank} ${layoutText(c.fastest)}, is ${faster < 0.0005 ? 'under 0.1%' : `${(faster * 100).toFixed(1)}%`} faster`;
  return `chosen: ${layoutText(best)}: ties within ${within} with ${others} (${fastest}); the simplest of them`;
}

/**
 * How the table is ordered, said above it: in bands of plans within the tie tolerance of the fastest left, each band
 * simplest first, so tokens/s is not in order inside a band (issue 47: a reader took it for a ranking error).
 */
export function searchOrderText(tolerance: number | null): string {
  const within = tolerance === null ? 'a few percent' : `${Math.round(tolerance * 100)}%`;
  return `order: the fastest plan left and every plan within ${within} of it form a band, simplest first (no tensor or pipeline parallelism, less sharding, no offload, less checkpointing, less accumulation): inside a band tokens/s is not in order`;
}

/** A layout search: the feasible plans ranked by throughput, ties to the simplest. */
export function renderSearch(j: PlanJson): string {
  const srch = j.search;
  if (!srch || srch.plans.length === 0) return renderPlan(j);
  const choice = searchChoiceText(j);
  const lines = [
    `${j.model.name} on ${hardwareText(j)}: ${srch.feasible} of ${srch.candidates} candidate plans fit`,
    ...(j.assumed?.length ? [`assumed (not given): ${j.assumed.join('; ')}`] : []),
    ...(choice !== null ? [choice] : []),
    searchOrderText(srch.choice?.tolerance ?? null),
    '',
    `${'#'.padStart(3)}  ${'tokens/s'.padStart(10)}  ${'step ms'.padStart(9)}  ${'peak'.padStart(10)}  ${'binds'.padEnd(13)}  layout`,
  ];
  for (const p of srch.plans) {
    lines.push(
      `${String(p.rank).padStart(3)}  ${fmtInt(p.tokensPerSec).padStart(10)}  ${p.stepTimeMs.toFixed(1).padStart(9)}  ${fmtGiB(p.peakAllocatedBytes, 2).padStart(10)}  ${p.bindingTerm.padEnd(13)}  ${layoutText(p)}, global ${p.globalBatch}`,
    );
    if (p.savers.length > 0) lines.push(`${' '.repeat(5)}savers: ${p.savers.map((sv) => `${sv.change} -${(sv.savedBytes / 1024 ** 3).toFixed(1)} GiB`).join('; ')}`);
  }
  return `${lines.join('\n')}\n`;
}

/** The same report as Markdown (a pull request, an issue). */
export function renderPlanMarkdown(j: PlanJson): string {
  const source = modelSourceText(j);
  const out = [`## gpuwise plan: ${j.model.name}`, '', ...(source ? [`${source[0]?.toUpperCase()}${source.slice(1)}  `] : []), ...headLines(j).slice(1).map((l) => `${l}  `), ''];
  if (j.wouldFit) out.push(`**Does not fit**: ${j.wouldFit.explanation}`, '');
  out.push(`| memory per GPU (binding: ${j.memory.bindingPhase}) | GiB | note |`, '|---|---:|---|');
  for (const c of j.memory.components) out.push(`| ${c.label} | ${(c.bytes / 1024 ** 3).toFixed(2)} | ${c.note.replace(/\|/g, '\\|')} |`);
  out.push(
    `| **max_memory_allocated** | **${(j.memory.peakAllocatedBytes / 1024 ** 3).toFixed(2)}** | |`,
    `| max_memory_reserved | ${(j.memory.peakReservedBytes / 1024 ** 3).toFixed(2)} | |`,
    `| nvidia-smi | ${(j.memory.deviceUsedBytes / 1024 ** 3).toFixed(2)} | |`,
    `| budget | ${(j.memory.budgetBytes / 1024 ** 3).toFixed(2)} | |`,
    '',
  );
  if (j.wouldFit) {
    out.push('What would fit:', '');
    if (j.wouldFit.maxMicroBatch > 0) out.push(`- \`--batch ${j.wouldFit.maxMicroBatch}\``);
    for (const c of j.wouldFit.changes) out.push(`- ${c}`);
    out.push('');
  } else {
    out.push(`Step time **${j.stepTimeMs.toFixed(1)} ms** (${j.time.bindingTerm}-bound), ${fmtInt(j.time.tokensPerSec)} tokens/s, MFU ${(j.time.mfu * 100).toFixed(0)}%`, '');
    if (j.maxBatch) out.push(`Largest micro-batch that fits: **${j.maxBatch.microBatch}**`, '');
    if (j.search) {
      const choice = searchChoiceText(j);
      if (choice !== null) out.push(`${choice[0]?.toUpperCase()}${choice.slice(1)}.`, '');
      const order = searchOrderText(j.search.choice?.tolerance ?? null);
      out.push(`${order[0]?.toUpperCase()}${order.slice(1)}.`, '');
      for (const p of j.search.plans) out.push(`${p.rank}. ${layoutText(p)}, global ${p.globalBatch}: ${fmtInt(p.tokensPerSec)} tokens/s, ${p.stepTimeMs.toFixed(1)} ms`);
    }
    if (j.savers.length) out.push('', 'Memory savers:', '', ...j.savers.map((sv) => `- ${sv.change}: −${(sv.savedBytes / 1024 ** 3).toFixed(2)} GiB`));
    if (j.faster?.length) out.push('', 'Faster layouts that fit:', '', ...j.faster.map((f) => `- ${fasterText(j, f).replace(/ {2,}/g, ': ')}`));
  }
  out.push('', `<sub>gpuwise plan, schema ${j.schemaVersion}</sub>`);
  return `${out.join('\n')}\n`;
}
