/**
 * The report's opening (report/planFirst.ts, issue 47): the plan's steps with the change to make, and a finding's gain
 * in the plan beside its gain alone (the Trainer's GPT-2 in fp32: compile alone -12%, after bf16 1.58x).
 */
import { join } from 'node:path';
import { autocastLines } from '../../src/advice/snippets.js';
import { describe, expect, it } from 'vitest';
import { renderDoctorText } from '../../src/doctor/render.js';
import { changeLine, inPlanText } from '../../src/report/planFirst.js';
import { TYPICAL_ERROR_DATA } from '../../src/pace/typicalErrorData.js';
import { REPO, rediagnosed } from '../doctor/helpers.js';
import { runCli } from '../helpers/cli.js';

describe('what to do, first', () => {
  it('the change is the first statement of the fix, a call over several lines joined, comments left out', () => {
    expect(changeLine('# pin the memory\nloader = DataLoader(dataset,\n    num_workers=8,  # the cores\n    pin_memory=True)\nx = 1')).toBe(
      'loader = DataLoader(dataset, num_workers=8, pin_memory=True)',
    );
    expect(changeLine('# only a comment')).toBeNull();
    expect(changeLine('import torch.nn.functional as F\ny = F.scaled_dot_product_attention(q, k, v, is_causal=True)')).toBe(
      'y = F.scaled_dot_product_attention(q, k, v, is_causal=True)',
    );
    // a block's header comes with its first statement
    expect(changeLine('for i, b in enumerate(mbs):\n    ctx = model.no_sync() if i < n else nullcontext()\n    with ctx:\n        loss.backward()')).toBe(
      'for i, b in enumerate(mbs): ctx = model.no_sync() if i < n else nullcontext() ...',
    );
    // ... or the comment that opens it, where the body is the loop's own (minGPT's forward is model(idx, targets))
    expect(changeLine(autocastLines('bfloat16').join('\n'))).toBe('with torch.autocast("cuda", dtype=torch.bfloat16):  # your forward and loss as they are');
  });

  it("the Trainer's GPT-2: the plan in the framework's words first; compile's gain alone and in the plan both said", async () => {
    const r = await rediagnosed(join(REPO, 'examples', 'realworld', 'runs', 'hf_trainer_gpt2'));
    const text = renderDoctorText(r).split('\n');
    expect(text[4]).toMatch(/^What to do: the run's mean step 184 ms -> /);
    expect(text[5]).toMatch(/^ {2}1\. bf16 autocast \(tensor cores\): 184 ms -> /);
    expect(text[6]).toBe('       change: TrainingArguments(..., bf16=True)   · all of it: finding 1');
    // each pointer names the finding printed with that number, the step's own
    for (const [n, id] of [[1, 'no-tensor-cores'], [2, 'fusion'], [3, 'host-sync']] as const) {
      expect(text.some((l) => l.includes(`· all of it: finding ${n}`))).toBe(true);
      expect(text.find((l) => l.startsWith(` ${n}. `))).toContain(`[${id},`);
    }
    const fusion = r.findings.find((f) => f.id === 'fusion')!;
    const planned = inPlanText(r.pace?.plan, fusion);
    expect(planned).toMatch(/^in the plan \(step 2, after bf16 autocast \(tensor cores\)\): 75\.2 ms -> /);
    expect(text.join('\n')).toContain(`    expected alone: ${fusion.estimatedGain ? '184 ms' : ''}`);
    expect(text.join('\n')).toContain(`    ${planned}`);
    // a finding whose gain is the same alone and in the plan (the plan's first step) says it once
    expect(inPlanText(r.pace?.plan, r.findings.find((f) => f.id === r.pace?.plan.steps[0]?.id)!)).toBeNull();
    // the plan closes saying its times are estimates, and how to measure them (a cold reader took them for measurements)
    const blank = text.indexOf('', 5);
    expect(text.slice(blank - 2, blank)).toEqual([
      `       (estimates from this run: 4 in 5 of doctor's ${TYPICAL_ERROR_DATA.all.steps} plan steps run on H100/H200 GPUs measured within the likely range of their kind of fix (docs/validation/pace.md);`,
      '       `gpuwise tune --plan -- CMD` measures each step on your script)',
    ]);
  });

  it("the workers' start-up is said as part of what epoch starts cost, the pace section's figure (H100 JPEG ResNet)", async () => {
    const r = await rediagnosed(join(REPO, 'examples', 'pace', 'runs', 'h100', 'jpeg_resnet'));
    const text = renderDoctorText(r);
    const part = /\(part of the (\S+ m?s) a step that epoch starts cost, the first batch's fill included\)/.exec(text);
    const pace = /epoch starts add (\S+ m?s)/.exec(text);
    expect(part?.[1]).toBeDefined();
    expect(part?.[1]).toBe(pace?.[1]);
  });

  it("two step figures near each other are each named: the run's mean step (the plan) and the profiled window's (issue 47)", async () => {
    // the Trainer's GPT-2: 184 ms the run's mean step, 189 ms the window's (the profiler slows it)
    const r = await rediagnosed(join(REPO, 'examples', 'realworld', 'runs', 'hf_trainer_gpt2'));
    const text = renderDoctorText(r).split('\n');
    expect(text[4]).toBe("What to do: the run's mean step 184 ms -> 27.1 ms (6.77x; likely 22.6-33.9 ms) with these 3 changes, each on top of the ones before");
    expect(text.find((l) => l.includes('steps: '))).toMatch(/median 183 ms, mean 184 ms/);
    const sync = r.findings.find((f) => f.id === 'host-sync')!;
    expect(sync.evidence[0]).toBe("GPU idle after the host blocked on the GPU: 9.74 ms per step (5.1% of the profiled window's 189 ms step)");
    // every share of a 189 ms step in the findings names it as the window's
    for (const f of r.findings) for (const e of f.evidence) if (/\b189 ms\b/.test(e)) expect(e).toContain("the profiled window's 189 ms step");
    // analyze has the window's step alone: its headline is unchanged
    const a = await runCli(['analyze', join(REPO, 'examples', 'traces', 'resnet_starved.trace.json.gz')]);
    expect(a.stdout.split('\n')[2]).toMatch(/^What to do: 625 ms -> 38\.8 ms a step \(16\.10x; likely [\d.]+(?: [mu]?s)?-[\d.]+ [mu]?s\)/);
    expect(a.stdout).toMatch(/\(estimates from the trace: 4 in 5 .*\n {7}make a change and profile again to measure it\)/);
  });
});

describe("a plan step's change says what that step sets (the cold read: 9 workers in step 1, 'needs about 11' in step 2, pin_memory twice)", () => {
  it('the H100 JPEG ResNet: step 1 its own workers and no pinned memory, step 2 pinned memory with the workers it needs and the non-blocking copy', async () => {
    const r = await rediagnosed(join(REPO, 'examples', 'pace', 'runs', 'h100', 'jpeg_resnet'));
    const plan = r.pace!.plan!;
    const lines = renderDoctorText(r).split('\n');
    const changes = lines.filter((l) => /^ {7}change: /.test(l));
    expect(plan.steps.map((s) => s.id)).toEqual(['dataloader-bound', 'pageable-h2d']);
    const workers1 = /num_workers \d+ -> (\d+)/.exec(plan.steps[0]!.label)![1];
    expect(changes[0]).toContain(`num_workers=${workers1}`);
    expect(changes[0]).not.toContain('pin_memory');
    expect(changes[1]).toContain(`num_workers=${plan.steps[1]!.workersNeeded}`);
    expect(changes[1]).toMatch(/pin_memory=True.*non_blocking=True/);
  });
});
