/**
 * `gpuwise plan`: predict GPU memory and step time for a model and training set-up, find the largest
 * batch, search parallel layouts, and emit launch configs. Thin shell over src/planner.
 */
import { writeFileSync } from 'node:fs';
import { type ModelSource, resolveModelArg } from '../io/hfModelId.js';
import { readModel } from '../io/readModelConfig.js';
import { checkHtmlTarget } from '../io/reportTarget.js';
import { EMIT_FORMATS, type EmitFormat, emit } from '../planner/emit.js';
import { PlanError } from '../planner/errors.js';
import { customGpu, DEFAULT_CUSTOM_BANDWIDTH_GBS } from '../planner/customGpu.js';
import { GPUS, type GpuSpec } from '../planner/gpus.js';
import { gpuAssumption, gpuFromArg } from './gpuArg.js';
import { inlineAssets } from '../serve/assets.js';
import { renderPlanHtml } from '../serve/pages/plan.js';
import { defaultStrategy, parallelismFor, STRATEGIES, type Strategy } from '../planner/layout.js';
import { type ModelDescription, positionTableParams } from '../planner/model.js';
import { whatWouldFit } from '../planner/noFit.js';
import { evaluatePlan, fasterLayouts, maxMicroBatch, memorySavers, type Plan, type PlanRequest, searchPlans } from '../planner/plan.js';
import { renderPlan, renderPlanMarkdown, renderSearch } from '../planner/render.js';
import { type ModelSourceJson, type PlanJson, planJson, planSummaryJson } from '../planner/report.js';
import { wrapText } from '../util/wrap.js';
import type {
  Checkpointing,
  Hardware,
  Mode,
  OptimizerKind,
  Precision,
  TrainingSetup,
} from '../planner/setup.js';
import { EXIT_FINDINGS, EXIT_OK } from './version.js';
import { jsonReport } from './jsonReport.js';
import { parseBytes, parseFlags, UsageError } from './usage.js';

const HELP = `gpuwise plan --model MODEL [options]: predict memory and step time before anything runs

Model and set-up:
  --model MODEL           Hugging Face config.json (or its folder; T5's encoder-decoders too), a gpuwise-model/1 summary, or a
                          Hugging Face model id (gpt2, meta-llama/Llama-3.1-8B): its config.json from the
                          Hugging Face cache (HF_HUB_CACHE, HF_HOME/hub or ~/.cache/huggingface/hub), else
                          the one shipped with gpuwise (GPT-2, Llama 2/3/3.1, Mistral, Mixtral, Qwen2/2.5,
                          BERT: gpt2-xl, llama-2-7b, mistral-7b, qwen2.5-7b, bert-base-uncased ...)
  --batch N               per-GPU micro-batch (default 1)
  --seq N                 sequence length; an encoder-decoder's (T5's) source length (default min(max positions, 2048))
  --target-seq N          an encoder-decoder's target (decoder) length (default the source length)
  --precision P           fp32 | amp-bf16 | amp-fp16 | bf16 (default amp-bf16; amp-fp16 on a GPU without bf16)
  --optimizer O           adamw | adam | sgd | sgd-momentum | adafactor | adamw-8bit (default adamw)
  --checkpointing C       none | full | selective (default none)
  --grad-accum N          gradient accumulation steps (default 1)
  --mode M                train | infer (default train)
Hardware:
  --gpu NAME              ${GPUS.map((g) => g.id).join(', ')} (default h100-sxm)
  --gpu-memory SIZE       explicit card memory, e.g. 40 (GiB) or 80GB (with --gpu-tflops, instead of --gpu)
  --gpu-tflops N          explicit dense bf16 TFLOP/s;  --gpu-bandwidth GB/s for memory bandwidth
  --gpus N                GPUs per node (default 1);  --nodes N (default 1)
  --intra-bw GB/s         per-GPU bandwidth inside a node;  --inter-bw GB/s across nodes (default 25)
  --memory-cap SIZE       budget smaller than the card (e.g. 20, in GiB, or 20GiB)
Parallelism:
  --strategy S            single | ddp | fsdp | zero1 | zero2 | zero3 | hsdp | tp | pp (default ddp on >1 GPU)
  --tp N, --pp N          tensor / pipeline parallel degrees
  --no-reshard            FSDP2 reshard_after_forward=False
  --offload               optimizer state (FSDP: sharded params too) in CPU memory
Questions:
  --max-batch             the largest micro-batch that fits
  --search                rank feasible layouts by predicted throughput (--global-batch N, --top N)
  --emit FORMAT           torchrun | accelerate | deepspeed | fsdp2 | slurm (launch config for the plan)
  --script FILE           training script named in emitted configs (default train.py)
Output:
  --json                  machine-readable output (schemaVersion 1)
  --md                    Markdown (for an issue or a pull request)
  --html FILE             also write a self-contained HTML page to FILE

Every default the plan rests on is printed ("assumed"). Exit codes: 0 the plan fits, 1 it does not
(the full breakdown and what would fit are printed, --json included), 2 bad input or usage.
`;

function int(v: string | undefined, flag: string, fallback: number, min = 1): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`${flag}: '${v}' is not an integer >= ${min}`);
  return n;
}

function positive(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${flag}: '${v}' is not a positive number`);
  return n;
}

function oneOf<T extends string>(v: string | undefined, flag: string, allowed: readonly T[], fallback: T): T {
  if (v === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(v)) throw new UsageError(`${flag}: '${v}' is not one of ${allowed.join(', ')}`);
  return v as T;
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags({
    args: argv,
    allowPositionals: false,
    options: {
      model: { type: 'string' },
      batch: { type: 'string' },
      seq: { type: 'string' },
      'target-seq': { type: 'string' },
      precision: { type: 'string' },
      optimizer: { type: 'string' },
      checkpointing: { type: 'string' },
      'grad-accum': { type: 'string' },
      mode: { type: 'string' },
      gpu: { type: 'string' },
      'gpu-memory': { type: 'string' },
      'gpu-tflops': { type: 'string' },
      'gpu-bandwidth': { type: 'string' },
      gpus: { type: 'string' },
      nodes: { type: 'string' },
      'intra-bw': { type: 'string' },
      'inter-bw': { type: 'string' },
      'memory-cap': { type: 'string' },
      strategy: { type: 'string' },
      tp: { type: 'string' },
      pp: { type: 'string' },
      'no-reshard': { type: 'boolean' },
      offload: { type: 'boolean' },
      'max-batch': { type: 'boolean' },
      search: { type: 'boolean' },
      'global-batch': { type: 'string' },
      top: { type: 'string' },
      emit: { type: 'string' },
      script: { type: 'string' },
      json: { type: 'boolean' },
      md: { type: 'boolean' },
      html: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (values.model === undefined)
    throw new UsageError('--model is required (a Hugging Face config.json, its folder, or a model id such as gpt2); see gpuwise plan --help');
  if (values.json && values.md) throw new UsageError('--json and --md are exclusive');
  const source = resolveModelArg(values.model);
  const { file, model } = readModel(source);
  if (values.html !== undefined) checkHtmlTarget(values.html, file === null ? [] : [file]);

  let result: { json: PlanJson | null; text: string; code: number };
  try {
    // A path names the file it led to (a folder's config.json).
    result = runPlan(model, values, source.kind === 'file' && file !== null ? { ...source, path: file } : source);
  } catch (e) {
    if (e instanceof PlanError) throw new UsageError(e.message);
    throw e;
  }
  process.stdout.write(result.text);
  if (values.html !== undefined && result.json !== null) {
    writeFileSync(values.html, renderPlanHtml(result.json, inlineAssets()));
    process.stderr.write(`gpuwise plan: wrote ${values.html}\n`);
  }
  return result.code;
}

type Values = Record<string, string | boolean | undefined>;
const s = (v: Values, k: string) => v[k] as string | undefined;

/** `model.source` of the report: where the model's description was read. */
function sourceJson(src: ModelSource): ModelSourceJson {
  if (src.kind === 'file') return { kind: 'file', path: src.path, hubId: null };
  if (src.kind === 'hf-cache') return { kind: 'hf-cache', path: src.path, hubId: src.hubId };
  return { kind: 'shipped', path: null, hubId: src.hubId };
}

function buildHardware(v: Values, assumed: string[]): Hardware {
  let gpu: GpuSpec;
  const mem = s(v, 'gpu-memory');
  if (mem !== undefined) {
    const tflops = positive(s(v, 'gpu-tflops'), '--gpu-tflops');
    if (tflops === undefined) throw new UsageError('--gpu-memory needs --gpu-tflops (dense bf16 TFLOP/s) too');
    const bw = positive(s(v, 'gpu-bandwidth'), '--gpu-bandwidth');
    if (bw === undefined) assumed.push(`--gpu-bandwidth ${DEFAULT_CUSTOM_BANDWIDTH_GBS} (GB/s)`);
    gpu = customGpu(parseBytes(mem, '--gpu-memory'), tflops, bw);
  } else {
    const name = s(v, 'gpu');
    if (name === undefined) assumed.push('--gpu h100-sxm');
    const match = gpuFromArg(name ?? 'h100-sxm', '--gpu', 'give --gpu-memory and --gpu-tflops');
    const reading = name === undefined ? null : gpuAssumption(name, '--gpu', match);
    if (reading !== null) assumed.push(reading);
    gpu = match.gpu;
  }
  const cap = s(v, 'memory-cap');
  const gpusPerNode = int(s(v, 'gpus'), '--gpus', 1);
  const nodes = int(s(v, 'nodes'), '--nodes', 1);
  // Issue 47: every default a prediction rests on is said, the bandwidths too (where they are used).
  if (gpusPerNode > 1 && s(v, 'intra-bw') === undefined)
    assumed.push(
      `--intra-bw ${Math.round(gpu.intraNodeBandwidth / 1e9)} (GB/s inside a node: ${mem !== undefined ? 'the default for a GPU given by its figures' : `the ${gpu.name.replace(/^NVIDIA\s+/, '')} catalogue entry`})`,
    );
  if (nodes > 1 && s(v, 'inter-bw') === undefined) assumed.push('--inter-bw 25 (GB/s across nodes)');
  if (v.offload) assumed.push('host-GPU bandwidth 25 GB/s for the offload (no flag)');
  return {
    gpu,
    gpusPerNode,
    nodes,
    intraNodeBandwidth: (positive(s(v, 'intra-bw'), '--intra-bw') ?? gpu.intraNodeBandwidth / 1e9) * 1e9,
    interNodeBandwidth: (positive(s(v, 'inter-bw'), '--inter-bw') ?? 25) * 1e9,
    hostBandwidth: 25e9,
    ...(cap !== undefined ? { memoryCapBytes: parseBytes(cap, '--memory-cap') } : {}),
  };
}

/**
 * An encoder-decoder's target length (the source length when not given, and said so, with the attention the plan
 * assumes); none for other models, where the flag is refused.
 */
function targetSeqOf(model: ModelDescription, v: Values, seq: number, assumed: string[]): number | undefined {
  const given = s(v, 'target-seq');
  if (!model.encoderDecoder) {
    if (given !== undefined) throw new UsageError(`--target-seq applies to encoder-decoder models (T5); ${model.name} has one stack: give --seq`);
    return undefined;
  }
  if (given === undefined) assumed.push(`--target-seq ${seq} (the source length)`);
  assumed.push("T5's attention computed eagerly, its scores kept per head (no flag: transformers' modeling_t5.py before T5 dispatched to SDPA)");
  return int(given, '--target-seq', seq);
}

/** The request the flags describe, with the defaults used listed in `assumed`. */
function buildRequest(model: ModelDescription, v: Values, assumed: string[]): PlanRequest {
  const hw = buildHardware(v, assumed);
  const bf16 = hw.gpu.bf16Tflops > 0;
  const precisionDefault: Precision = bf16 ? 'amp-bf16' : 'amp-fp16';
  if (s(v, 'precision') === undefined) assumed.push(`--precision ${precisionDefault}${bf16 ? '' : ` (${hw.gpu.name} has no bf16)`}`);
  const seqDefault = Math.min(model.maxPositions, 2048);
  if (s(v, 'seq') === undefined) assumed.push(`--seq ${seqDefault}${seqDefault === model.maxPositions ? " (the model's maximum)" : ''}`);
  const seq = int(s(v, 'seq'), '--seq', seqDefault);
  const targetSeq = targetSeqOf(model, v, seq, assumed);
  if (s(v, 'batch') === undefined && !v['max-batch'] && !v.search) assumed.push('--batch 1');
  if (s(v, 'optimizer') === undefined) assumed.push('--optimizer adamw');
  // --search chooses the accumulation and the checkpointing itself.
  if (s(v, 'grad-accum') === undefined && !v.search) assumed.push('--grad-accum 1');
  if (s(v, 'checkpointing') === undefined && !v.search) assumed.push('--checkpointing none');
  if (s(v, 'mode') === undefined) assumed.push('--mode train');
  const setup: TrainingSetup = {
    microBatch: int(s(v, 'batch'), '--batch', 1),
    seq,
    ...(targetSeq !== undefined ? { targetSeq } : {}),
    precision: oneOf<Precision>(s(v, 'precision'), '--precision', ['fp32', 'amp-bf16', 'amp-fp16', 'bf16'], precisionDefault),
    optimizer: oneOf<OptimizerKind>(s(v, 'optimizer'), '--optimizer', ['adamw', 'adam', 'sgd', 'sgd-momentum', 'adafactor', 'adamw-8bit'], 'adamw'),
    checkpointing: oneOf<Checkpointing>(s(v, 'checkpointing'), '--checkpointing', ['none', 'full', 'selective'], 'none'),
    gradAccum: int(s(v, 'grad-accum'), '--grad-accum', 1),
    mode: oneOf<Mode>(s(v, 'mode'), '--mode', ['train', 'infer'], 'train'),
  };
  if (setup.seq > model.maxPositions && positionTableParams(model) > 0)
    throw new UsageError(`--seq ${setup.seq} exceeds the model's ${model.maxPositions} positions`);
  if ((setup.precision === 'amp-bf16' || setup.precision === 'bf16') && !bf16)
    throw new UsageError(`--precision ${setup.precision}: ${hw.gpu.name} has no bf16 support; use amp-fp16 or fp32`);
  const strategyFlag = s(v, 'strategy');
  const strategy = strategyFlag === undefined ? undefined : oneOf<Strategy>(strategyFlag, '--strategy', STRATEGIES, 'ddp');
  if (strategy === undefined && hw.gpusPerNode * hw.nodes > 1 && s(v, 'tp') === undefined && s(v, 'pp') === undefined && !v.search)
    assumed.push(`--strategy ${defaultStrategy(hw)}`);
  const parallelism = parallelismFor(
    {
      ...(strategy !== undefined ? { strategy } : {}),
      ...(s(v, 'tp') !== undefined ? { tp: int(s(v, 'tp'), '--tp', 1) } : {}),
      ...(s(v, 'pp') !== undefined ? { pp: int(s(v, 'pp'), '--pp', 1) } : {}),
      noReshard: Boolean(v['no-reshard']),
      offload: Boolean(v.offload),
    },
    hw,
    model,
  );
  return { model, setup, parallelism, hardware: hw };
}

/** The report a plan gives: text or JSON, and the exit code (1: it does not fit). */
function report(v: Values, json: PlanJson, render: (j: PlanJson) => string): { json: PlanJson; text: string; code: number } {
  // The terminal report's long lines (the set-up, the assumptions, what would fit) wrap to the terminal's width.
  const width = process.stdout.isTTY ? (process.stdout.columns ?? 0) : 0;
  const text = v.json ? jsonReport(json) : v.md ? renderPlanMarkdown(json) : wrapText(render(json), width, 4);
  return { json, text, code: json.fits && !json.wouldFit ? EXIT_OK : EXIT_FINDINGS };
}

function notFitting(req: PlanRequest, plan: Plan, assumed: string[]): PlanJson {
  const json = planJson(req.model, req.hardware, plan, []);
  json.fits = false;
  json.wouldFit = whatWouldFit(req, plan);
  if (assumed.length) json.assumed = assumed;
  return json;
}

function runPlan(model: ModelDescription, v: Values, source: ModelSource): { json: PlanJson | null; text: string; code: number } {
  const assumed: string[] = [];
  if (source.kind !== 'file' && source.reading !== null) assumed.push(`--model ${source.hubId} ('${s(v, 'model')}' read as this; ${source.reading})`);
  const req = buildRequest(model, v, assumed);
  // Every report names where the model's description came from.
  const output = (json: PlanJson, render: (j: PlanJson) => string) => report(v, { ...json, model: { ...json.model, source: sourceJson(source) } }, render);
  const { setup, hardware: hw } = req;
  const emitFormat = s(v, 'emit') === undefined ? undefined : oneOf<EmitFormat>(s(v, 'emit'), '--emit', EMIT_FORMATS, 'torchrun');

  if (v.search) {
    const globalBatch = s(v, 'global-batch') === undefined ? undefined : int(s(v, 'global-batch'), '--global-batch', 1);
    const top = int(s(v, 'top'), '--top', 10);
    const res = searchPlans(req, { ...(globalBatch !== undefined ? { globalBatch } : {}) });
    const best = res.plans[0];
    if (!best) {
      const json = notFitting(req, evaluatePlan(req), assumed);
      json.wouldFit!.explanation = `no layout of ${hw.gpusPerNode * hw.nodes} x ${hw.gpu.name} fits ${model.name} at seq ${setup.seq}${globalBatch ? ` with global batch ${globalBatch}` : ''} (${res.candidates} candidates tried); add GPUs, shorten --seq or use a larger card. The requested set-up ${json.wouldFit!.explanation}`;
      json.search = { candidates: res.candidates, feasible: 0, plans: [] };
      return emitFormat ? emitRefused(json) : output(json, renderPlan);
    }
    const shown = res.plans.slice(0, top).map((p) => ({ p, savers: memorySavers({ ...req, setup: p.setup, parallelism: p.parallelism }, p) }));
    if (emitFormat) return writeEmit(emitFormat, model, best, hw, v, assumed);
    const json: PlanJson = {
      ...planJson(model, hw, best, shown[0]?.savers ?? []),
      search: {
        candidates: res.candidates,
        feasible: res.feasible,
        plans: shown.map((x, i) => planSummaryJson(i + 1, x.p, x.savers)),
        ...(res.choice
          ? {
              choice: {
                tolerance: res.choice.tolerance,
                tiedPlans: res.choice.tied,
                fastest: planSummaryJson(res.plans.indexOf(res.choice.fastest) + 1, res.choice.fastest, []),
              },
            }
          : {}),
      },
    };
    if (assumed.length) json.assumed = assumed;
    return output(json, renderSearch);
  }

  let plan = evaluatePlan(req);
  let maxBatch: PlanJson['maxBatch'];
  if (v['max-batch']) {
    const mb = maxMicroBatch(req);
    if (mb.microBatch === 0 || !mb.plan) {
      const one = { ...req, setup: { ...setup, microBatch: 1 } };
      const json = notFitting(one, evaluatePlan(one), assumed);
      return emitFormat ? emitRefused(json) : output(json, renderPlan);
    }
    maxBatch = { microBatch: mb.microBatch, peakAllocatedBytes: mb.plan.memory.peakAllocatedBytes, budgetBytes: mb.plan.budgetBytes };
    if (s(v, 'batch') === undefined) plan = mb.plan;
  }
  if (!plan.fits) {
    const json = notFitting(req, plan, assumed);
    return emitFormat ? emitRefused(json) : output(json, renderPlan);
  }
  if (emitFormat) return writeEmit(emitFormat, model, plan, hw, v, assumed);
  const json = planJson(model, hw, plan, memorySavers({ ...req, setup: plan.setup }, plan));
  const faster = fasterLayouts({ ...req, setup: plan.setup }, plan);
  if (faster.length) json.faster = faster;
  if (maxBatch) json.maxBatch = maxBatch;
  if (assumed.length) json.assumed = assumed;
  return output(json, renderPlan);
}

function writeEmit(
  format: EmitFormat,
  model: ModelDescription,
  plan: Plan,
  hw: Hardware,
  v: Values,
  assumed: string[],
): { json: null; text: string; code: number } {
  try {
    const text = emit(format, { model, plan, hardware: hw, script: s(v, 'script') ?? 'train.py' });
    // The config is the output; what it rests on that the user did not give goes beside it, on stderr.
    if (assumed.length) process.stderr.write(`gpuwise plan: assumed (not given): ${assumed.join('; ')}\n`);
    return { json: null, text, code: EXIT_OK };
  } catch (e) {
    // The planner says why it cannot emit; the flags to change are the CLI's words.
    if (e instanceof PlanError)
      throw new UsageError(`--emit ${format}: ${e.message}${format === 'accelerate' ? '; use --emit torchrun' : format === 'fsdp2' ? ' (--strategy fsdp)' : ''}`);
    throw e;
  }
}

/** --emit on a plan that does not fit: no config on stdout; the reason and what would fit on stderr, exit 1. */
function emitRefused(json: PlanJson): { json: null; text: string; code: number } {
  const w = json.wouldFit!;
  const alternatives = [...(w.maxMicroBatch > 0 ? [`--batch ${w.maxMicroBatch}`] : []), ...w.changes];
  process.stderr.write(`gpuwise plan: does not fit, no config emitted: ${w.explanation}${alternatives.length ? `; would fit: ${alternatives.join('; ')}` : ''}\n`);
  return { json: null, text: '', code: EXIT_FINDINGS };
}
