import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { emit } from '../../src/planner/emit.js';
import { PlanError } from '../../src/planner/errors.js';
import { evaluatePlan, type PlanRequest } from '../../src/planner/plan.js';
import type { Hardware, Precision } from '../../src/planner/setup.js';
import { toYaml } from '../../src/planner/yaml.js';
import { hardware, request } from './helpers.js';

const ctx = (r: PlanRequest, script = 'train.py') => ({ model: r.model, plan: evaluatePlan(r), hardware: r.hardware, script });

/** Reads `--flag=value` / `--flag value` pairs from a (possibly line-continued) shell command. */
function flags(cmd: string): Map<string, string> {
  const toks = cmd.replace(/\\\n/g, ' ').split(/\s+/).filter(Boolean);
  const out = new Map<string, string>();
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    if (!t.startsWith('--')) continue;
    const eq = t.indexOf('=');
    if (eq > 0) out.set(t.slice(2, eq), t.slice(eq + 1));
    else out.set(t.slice(2), toks[i + 1] && !toks[i + 1]!.startsWith('--') ? toks[i + 1]! : 'true');
  }
  return out;
}

const multiNode: Hardware = hardware('h100-sxm', 8, 4);
const fsdp = request(
  'llama-2-7b',
  { microBatch: 2, gradAccum: 4, seq: 4096, checkpointing: 'full' },
  { dp: 'fsdp', dpSize: 32 },
  multiNode,
);
const ddp = request('gpt2', { microBatch: 8, gradAccum: 2 }, { dp: 'ddp', dpSize: 4 }, hardware('h200', 4));
const zero2 = request('qwen2-0.5b', { microBatch: 4, gradAccum: 3 }, { dp: 'zero2', dpSize: 8, cpuOffload: true }, hardware('a100-80', 8));

describe('torchrun', () => {
  it('single node: standalone, nproc = GPUs, the batch arithmetic in a comment', () => {
    const out = emit('torchrun', ctx(ddp));
    const f = flags(out);
    expect(out).toMatch(/^torchrun /m);
    expect(f.get('standalone')).toBe('true');
    expect(f.get('nproc_per_node')).toBe('4');
    expect(out).toContain('global batch 64 = micro-batch 8 x accumulation 2 x data-parallel 4');
  });
  it('multi-node: c10d rendezvous on MASTER_ADDR', () => {
    const f = flags(emit('torchrun', ctx(fsdp)));
    expect(f.get('nnodes')).toBe('4');
    expect(f.get('nproc_per_node')).toBe('8');
    expect(f.get('rdzv_backend')).toBe('c10d');
    expect(f.get('rdzv_endpoint')).toBe('$MASTER_ADDR:29500');
  });
  // Issue 47 item 6: the user's train.py has no --strategy, --micro-batch ...: the launch line holds torchrun's own
  // arguments and the script, nothing after it; the layout the script must set up is a comment in plain words.
  it("names no flag of the script: only torchrun's own arguments, the layout as a comment", () => {
    const z1 = request('gpt2', { microBatch: 32, gradAccum: 1 }, { dp: 'zero1', dpSize: 8 }, hardware('h100-sxm', 8));
    for (const [format, r] of [
      ['torchrun', z1],
      ['torchrun', fsdp],
      ['torchrun', ddp],
      ['slurm', fsdp],
    ] as const) {
      const out = emit(format, ctx(r));
      const code = out.split('\n').filter((l) => !l.startsWith('#'));
      const launch = code.join('\n').slice(code.join('\n').indexOf('torchrun'));
      const toks = launch.replace(/\\\n/g, ' ').split(/\s+/).filter(Boolean);
      expect(toks.at(-1), `${format}: the script ends the line`).toBe('train.py');
      for (const t of toks.filter((x) => x.startsWith('--'))) expect(t).toMatch(/^--(standalone|nnodes|nproc_per_node|rdzv_backend|rdzv_endpoint|rdzv_id)\b/);
      expect(out).not.toMatch(/--(strategy|micro-batch|grad-accum|seq|precision|checkpointing|tp|pp)\b/);
    }
    const out = emit('torchrun', ctx(z1));
    expect(out).toContain("# your script's flags for: ZeRO-1 (optimizer state sharded over 8 GPUs: DDP with torch.distributed.optim.ZeroRedundancyOptimizer, or DeepSpeed stage 1), micro-batch 32 per GPU, gradient accumulation 1, sequence 1024, precision amp-bf16 (fp32 weights under torch.autocast(dtype=torch.bfloat16)), no activation checkpointing\n");
    expect(emit('torchrun', ctx(fsdp))).toContain("# your script's flags for: FSDP (parameters, gradients and optimizer state sharded over 32 GPUs, resharded after forward), micro-batch 2 per GPU, gradient accumulation 4, sequence 4096, precision amp-bf16 (FSDP2 MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) over fp32 sharded parameters, no autocast), full activation checkpointing\n");
  });
});

describe('accelerate YAML', () => {
  it('FSDP2 plan', () => {
    const y = parseYaml(emit('accelerate', ctx(fsdp)));
    expect(y.distributed_type).toBe('FSDP');
    expect(y.num_machines).toBe(4);
    expect(y.num_processes).toBe(32);
    expect(y.mixed_precision).toBe('bf16');
    expect(y.gradient_accumulation_steps).toBe(4);
    expect(y.fsdp_config).toMatchObject({
      fsdp_version: 2,
      fsdp_reshard_after_forward: true,
      fsdp_activation_checkpointing: true,
      fsdp_offload_params: false,
    });
    expect(y.main_process_port).toBe(29500);
  });
  it('DDP and DeepSpeed plans', () => {
    const a = parseYaml(emit('accelerate', ctx(ddp)));
    expect([a.distributed_type, a.num_processes, a.rdzv_backend]).toEqual(['MULTI_GPU', 4, 'static']);
    // fp32: the ZeRO stage inline; any other precision lives in the DeepSpeed JSON (accelerate's mixed_precision bf16
    // would cast DeepSpeed's weights to bf16, which the plan's figures do not assume), and accelerate then takes no
    // mixed_precision or accumulation of its own
    const z32 = parseYaml(emit('accelerate', ctx({ ...zero2, setup: { ...zero2.setup, precision: 'fp32' } })));
    expect(z32.distributed_type).toBe('DEEPSPEED');
    expect(z32.mixed_precision).toBe('no');
    expect(z32.deepspeed_config).toMatchObject({ zero_stage: 2, gradient_accumulation_steps: 3, offload_optimizer_device: 'cpu' });
    const text = emit('accelerate', ctx(zero2));
    const z = parseYaml(text);
    expect(z.distributed_type).toBe('DEEPSPEED');
    expect(z.deepspeed_config).toEqual({ deepspeed_config_file: 'ds_config.json', zero3_init_flag: false });
    expect(z).not.toHaveProperty('mixed_precision');
    expect(z).not.toHaveProperty('gradient_accumulation_steps');
    expect(text).toContain('# ds_config.json: the JSON of the same gpuwise plan with --emit deepspeed;');
  });
  it('refuses tensor parallel plans', () => {
    const tp = request('llama-2-7b', {}, { tp: 8, dp: 'none', dpSize: 1 }, hardware('h100-sxm', 8));
    expect(() => emit('accelerate', ctx(tp))).toThrow(PlanError);
  });
});

describe('DeepSpeed JSON', () => {
  it('train_batch_size = micro x accumulation x data-parallel', () => {
    for (const r of [zero2, ddp, fsdp]) {
      const j = JSON.parse(emit('deepspeed', ctx(r)));
      expect(j.train_batch_size).toBe(j.train_micro_batch_size_per_gpu * j.gradient_accumulation_steps * r.parallelism.dpSize);
    }
    const z = JSON.parse(emit('deepspeed', ctx(zero2)));
    expect(z.zero_optimization.stage).toBe(2);
    expect(z.zero_optimization.offload_optimizer.device).toBe('cpu');
    expect(z.zero_optimization.reduce_bucket_size).toBe(896 * 896);
    expect(JSON.parse(emit('deepspeed', ctx(fsdp))).zero_optimization.stage).toBe(3);
  });
});

// Issue 47 item 6: the config states the precision the plan's figures assume. ZeRO-1/2 (and DDP, stage 0) keep the
// run's precision: autocast over fp32 weights is DeepSpeed's torch_autocast, not bf16.enabled (bf16 weights); pure bf16
// keeps bf16 master weights and state; FSDP (stage 3) is planned as FSDP2's bf16 parameters, DeepSpeed's bf16.
describe('DeepSpeed JSON precision is the plan\'s', () => {
  const at = (r: PlanRequest, precision: Precision) => JSON.parse(emit('deepspeed', ctx({ ...r, setup: { ...r.setup, precision } })));
  it('amp: torch autocast over fp32 weights for ZeRO and DDP', () => {
    for (const r of [zero2, ddp]) {
      const j = at(r, 'amp-bf16');
      expect(j.torch_autocast).toEqual({ enabled: true, dtype: 'bfloat16' });
      expect([j.bf16.enabled, j.fp16.enabled]).toEqual([false, false]);
    }
    expect(at(zero2, 'amp-fp16').torch_autocast).toEqual({ enabled: true, dtype: 'float16' });
  });
  it('bf16: bf16 master weights, gradients and optimizer state under ZeRO; fp32: nothing', () => {
    expect(at(zero2, 'bf16').bf16).toEqual({ enabled: true, bf16_master_weights_and_grads: true, bf16_optimizer_states: true });
    const f = at(zero2, 'fp32');
    expect([f.bf16.enabled, f.fp16.enabled, f.torch_autocast]).toEqual([false, false, undefined]);
  });
  it('FSDP (stage 3): bf16 parameters, no autocast', () => {
    const j = at(fsdp, 'amp-bf16');
    expect([j.bf16.enabled, j.torch_autocast]).toEqual([true, undefined]);
  });
});

describe('FSDP2 snippet', () => {
  it('shards every block then the root with the planned settings', () => {
    const code = emit('fsdp2', ctx({ ...fsdp, parallelism: { ...fsdp.parallelism, reshardAfterForward: false } }));
    expect(code).toContain('for block in model.model.layers:');
    expect(code.match(/fully_shard\(/g)?.length).toBe(2);
    expect(code).toContain('RESHARD_AFTER_FORWARD = False');
    expect(code).toContain('MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)');
    expect(code).toContain('init_device_mesh("cuda", (32,)');
    const g = /GLOBAL_BATCH = (\d+)/.exec(code);
    expect(Number(g?.[1])).toBe(2 * 4 * 32);
    // Python indentation is consistent: every indented line is a multiple of 4 spaces.
    for (const line of code.split('\n')) expect((/^ */.exec(line)?.[0].length ?? 0) % 4).toBe(0);
  });
  it('refuses a non-FSDP plan (the core names no flag: the CLI adds them)', () => expect(() => emit('fsdp2', ctx(ddp))).toThrow(/not FSDP: plan with the FSDP strategy first/));
});

describe('configs hold only what the plan decided (issue 47 item 6)', () => {
  it('DeepSpeed JSON and accelerate add no gradient clipping, print interval or activation settings of their own', () => {
    for (const r of [ddp, zero2, fsdp]) {
      const j = JSON.parse(emit('deepspeed', ctx(r)));
      for (const k of ['gradient_clipping', 'steps_per_print', 'wall_clock_breakdown', 'activation_checkpointing']) expect(j, k).not.toHaveProperty(k);
    }
    expect(parseYaml(emit('accelerate', ctx(zero2))).deepspeed_config).not.toHaveProperty('gradient_clipping');
  });
});

describe('sbatch', () => {
  it('nodes, GPUs per node and the torchrun line agree with the plan', () => {
    const out = emit('slurm', ctx(fsdp, 'pretrain.py'));
    const sb = new Map(
      out
        .split('\n')
        .filter((l) => l.startsWith('#SBATCH'))
        .map((l) => l.replace('#SBATCH --', '').split('=') as [string, string]),
    );
    expect(sb.get('nodes')).toBe('4');
    expect(sb.get('gpus-per-node')).toBe('8');
    expect(sb.get('ntasks-per-node')).toBe('1');
    expect(out.startsWith('#!/bin/bash\n')).toBe(true);
    const f = flags(out.slice(out.indexOf('srun')));
    expect(f.get('nnodes')).toBe('$SLURM_NNODES');
    expect(f.get('rdzv_id')).toBe('$SLURM_JOB_ID');
    expect(out).toContain('pretrain.py');
  });
});

describe('tiny YAML emitter', () => {
  it('round-trips through a real YAML parser, quoting what would change type', () => {
    const obj = { k: '.5', a: 'yes', b: 'plain_text', c: '1.5', d: 3, e: true, f: 'has: colon', g: { h: 'null', i: '' }, j: null };
    expect(parseYaml(toYaml(obj))).toEqual(obj);
  });
});

describe('hostile names and scripts (issue 20 item 3)', () => {
  const hostileName = 'x\ntouch PWNED_NAME\n#\r\u2028touch PWNED_LS';
  const hostileScript = "my train.py; touch PWNED_SCRIPT $(touch PWNED_SUB) `touch PWNED_BT` 'q'";
  const evil = (r: PlanRequest) => ({ ...ctx({ ...r, model: { ...r.model, name: hostileName } }), script: hostileScript });

  it('running the emitted torchrun and Slurm scripts with bash runs no injected command; the script stays one argument', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuwise-emit-'));
    try {
      // Stand-ins for the launchers: each records its arguments, one per line.
      for (const tool of ['torchrun', 'srun', 'scontrol'])
        writeFileSync(join(dir, tool), `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done >> ${dir}/${tool}.args\n`, { mode: 0o755 });
      for (const [format, r] of [
        ['torchrun', ddp],
        ['torchrun', fsdp],
        ['slurm', ddp],
        ['slurm', fsdp],
      ] as const) {
        const script = join(dir, `${format}.sh`);
        writeFileSync(script, emit(format, evil(r)));
        const run = spawnSync('bash', [script], {
          cwd: dir,
          env: { PATH: `${dir}:/usr/bin:/bin`, SLURM_JOB_NODELIST: 'n1', SLURM_NNODES: '2', SLURM_JOB_ID: '1' },
        });
        expect(run.status, `${format}: ${run.stderr}`).toBe(0);
      }
      expect(readdirSync(dir).filter((f) => f.startsWith('PWNED'))).toEqual([]);
      const args = readFileSync(join(dir, 'torchrun.args'), 'utf8').split('\n');
      expect(args).toContain(hostileScript);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('YAML, JSON and Python outputs keep the name inside their comment', () => {
    const y = emit('accelerate', evil(fsdp));
    expect(parseYaml(y)).toMatchObject({ distributed_type: 'FSDP' });
    for (const line of y.split('\n')) expect(line.includes('touch') ? line.startsWith('#') : true).toBe(true);
    const py = emit('fsdp2', evil(fsdp));
    for (const line of py.split('\n')) expect(line.includes('touch') ? line.startsWith('#') : true).toBe(true);
    expect(() => JSON.parse(emit('deepspeed', evil(ddp)))).not.toThrow();
  });
});
