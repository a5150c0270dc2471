#!/usr/bin/env node
/**
 * The equivalence suite's program generator (issue 43, "make it generative"): from a seed, one deterministic
 * training script that combines behaviours of several families — how its stdout and stderr are arranged (own files,
 * pipes with a prompt, slow or tee'd reader, files), what it prints (step lines, a progress bar redrawn with `\r`,
 * logging, binary bytes, a large dump), what of its environment it reads (os.environ, sys.path, an edited environment
 * handed to a child), the children it starts (a shell dumping its environment, `cat` into the inherited stdout, a
 * Python child), its data (a list, a DataLoader with 0-2 workers, a dict batch), model and optimizer, an evaluation
 * section (no_grad, inference_mode, a traced copy), signals it handles, threads, files it saves, and how it ends
 * (exit 0, a status, an uncaught exception, a death by a signal). Single cases check one behaviour each; a program
 * that combines them finds what they miss (a probe that reads the batch while a worker writes to a slow pipe...).
 *
 *   node scripts/equivalenceGen.mjs --seeds 0-3 --out DIR [--known FILE | --all]
 *
 * writes DIR/gen_SEED.py for each seed (the same seed gives the same bytes on every machine); each is a case for
 * scripts/equivalence.mjs (its declarations in its docstring). The runner's `--generate 0-3` does this itself.
 *
 * Behaviours today's doctor is known to break are left out while the case that shows the difference is listed in
 * test/equivalence/known-differences.json (each behaviour names that case: `blockedBy`), so the generated programs
 * look for new differences rather than repeat known ones; once the case is fixed and taken off the list, the
 * behaviour comes back into the programs by itself. `--all` keeps every behaviour (to see the known ones combined).
 * Node built-ins only.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** mulberry32: a small seeded generator, the same numbers on every machine. */
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    chance: (p) => next() < p,
  };
}

const PIPES = new Set(['pipe', 'slow', 'tee']);

/**
 * The optional behaviours. Each adds code to some of the program's sections: `imports`, `defs` (top level),
 * `before` (in main, before the loop), `step` (in the loop, after the optimizer step: `step`, `loss`, `model`,
 * `opt` are there), `after` (after the loop), `end` (the last lines: how the program ends; one behaviour only).
 * `blockedBy(arr)`: the case of known-differences.json that shows what this behaviour meets today under the stdio
 * arrangement `arr` (null: none).
 */
const BEHAVIOURS = [
  {
    id: 'out.steplines',
    add: (p, r) => {
      const every = r.pick([1, 4, 8]);
      const flush = r.chance(0.5) ? ', flush=True' : '';
      p.step.push(`if step % ${every} == 0:`, `    print("step %d loss %.6f" % (step, loss.item())${flush})`);
    },
  },
  {
    id: 'out.progress',
    add: (p) => {
      p.imports.add('import sys');
      p.step.push('sys.stderr.write("\\r%3d/%d [%-20s]" % (step + 1, STEPS, "#" * ((step + 1) * 20 // STEPS)))', 'sys.stderr.flush()');
      p.after.push('sys.stderr.write("\\n")');
    },
  },
  {
    id: 'out.logging',
    add: (p) => {
      p.imports.add('import logging');
      p.before.push(
        'logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")',
        'log = logging.getLogger("train")',
      );
      p.step.push('if step % 16 == 15:', '    log.info("step %d loss %.6f", step, loss.item())');
      p.after.push('logging.getLogger("train").warning("done after %d steps", STEPS)');
    },
  },
  {
    id: 'out.binary',
    add: (p, r) => {
      p.imports.add('import sys');
      const n = r.int(1, 8);
      p.after.push(
        'sys.stdout.flush()',
        `sys.stdout.buffer.write(bytes(range(256)) * ${n} + b"partial line without newline")`,
        'sys.stdout.buffer.write(b"\\n")',
        'sys.stdout.flush()',
      );
    },
  },
  {
    id: 'out.big',
    // A dump larger than a pipe holds: on a pipe made non-blocking it loses bytes (issue 43 item 1).
    blockedBy: (arr) => (PIPES.has(arr.stdout) ? 'io_slow_pipe_huge_print' : null),
    add: (p, r) => {
      const kb = r.pick([200, 600, 1500]);
      p.after.push(`print("".join("dump %06d %s\\n" % (i, "d" * 40) for i in range(${kb} * 1000 // 53)), end="")`);
    },
  },
  {
    id: 'env.read',
    add: (p) => {
      p.imports.add('import os');
      p.after.push('print("environment names", sorted(os.environ))', 'print("PYTHONPATH", os.environ.get("PYTHONPATH"))');
    },
  },
  {
    id: 'env.syspath',
    add: (p) => {
      p.imports.add('import os');
      p.imports.add('import sys');
      p.before.push('print("sys.path", [q.replace(sys.prefix, "PREFIX").replace(os.getcwd(), "CWD") for q in sys.path])');
    },
  },
  {
    id: 'env.edit_child',
    add: (p) => {
      p.imports.add('import os');
      p.imports.add('import subprocess');
      p.imports.add('import sys');
      p.after.push(
        'os.environ["TRAIN_STAGE"] = "eval"',
        'os.environ["PYTHONPATH"] = "helpers"',
        'out = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.environ)); print(os.environ.get(\'PYTHONPATH\'))"], capture_output=True, text=True)',
        'print("child environment", out.stdout.strip(), out.returncode)',
      );
    },
  },
  {
    id: 'child.sh_env_before',
    // A shell started before the first step saw doctor's variables (issue 43 item 3).
    blockedBy: () => 'envx_children_before_after',
    add: (p) => {
      p.imports.add('import subprocess');
      p.before.push(
        'env = subprocess.run(["sh", "-c", "env | LC_ALL=C sort"], capture_output=True, text=True).stdout',
        'print("shell environment", [v for v in env.splitlines() if not v.startswith(("_=", "SHLVL=", "PWD=", "OLDPWD="))])',
      );
    },
  },
  {
    id: 'child.sh_env_after',
    add: (p) => {
      p.imports.add('import subprocess');
      p.after.push(
        'env = subprocess.run(["sh", "-c", "env | LC_ALL=C sort"], capture_output=True, text=True).stdout',
        'print("shell environment after", [v for v in env.splitlines() if not v.startswith(("_=", "SHLVL=", "PWD=", "OLDPWD="))])',
      );
    },
  },
  {
    id: 'child.cat',
    add: (p) => {
      p.imports.add('import subprocess');
      p.imports.add('import sys');
      p.after.push(
        'with open("notes.txt", "w") as f:',
        '    f.write("".join("note %d\\n" % i for i in range(200)))',
        'sys.stdout.flush()',
        'print("cat exit", subprocess.run(["cat", "notes.txt"]).returncode, flush=True)',
      );
    },
  },
  {
    id: 'child.cat_big',
    // cat into a pipe made non-blocking fails with EAGAIN (issue 43 item 1).
    blockedBy: (arr) => (PIPES.has(arr.stdout) ? 'io_cat_child_huge' : null),
    add: (p) => {
      p.imports.add('import subprocess');
      p.imports.add('import sys');
      p.after.push(
        'with open("big.txt", "w") as f:',
        '    f.write("".join("line %07d %s\\n" % (i, "c" * 40) for i in range(12000)))',
        'sys.stdout.flush()',
        'print("cat exit", subprocess.run(["cat", "big.txt"]).returncode, flush=True)',
      );
    },
  },
  {
    id: 'child.python',
    add: (p) => {
      p.imports.add('import subprocess');
      p.imports.add('import sys');
      p.after.push(
        'child = subprocess.run([sys.executable, "-c", "import sys, threading; print(\'child\', len(sys.argv), sorted(t.name for t in threading.enumerate()), sys.excepthook is sys.__excepthook__)"], capture_output=True, text=True)',
        'print(child.stdout.strip(), child.stderr.strip(), child.returncode)',
      );
    },
  },
  {
    id: 'io.fcntl',
    // O_NONBLOCK showed on piped stdout/stderr (issue 43 item 1).
    blockedBy: (arr) => (PIPES.has(arr.stdout) || PIPES.has(arr.stderr) ? 'io_fcntl_flags' : null),
    add: (p) => {
      p.imports.add('import fcntl');
      p.imports.add('import os');
      p.after.push(
        'print("nonblocking", [bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NONBLOCK) for fd in (0, 1, 2)], [os.get_blocking(fd) for fd in (0, 1, 2)])',
      );
    },
  },
  {
    id: 'eval.nograd',
    add: (p) => {
      p.after.push(
        'model.eval()',
        'with torch.no_grad():',
        '    print("eval loss %.6f" % loss_of(model, batches[0]).item())',
        'model.train()',
      );
    },
  },
  {
    id: 'eval.inference',
    add: (p) => {
      p.after.push(
        'with torch.inference_mode():',
        '    out = forward(model, batches[1])',
        '    print("inference", tuple(out.shape), "%.6f" % out.sum().item())',
      );
    },
  },
  {
    id: 'eval.trace',
    add: (p) => {
      p.imports.add('import copy');
      p.after.push(
        'frozen = copy.deepcopy(model).eval()',
        'example = batches[0]["x"] if isinstance(batches[0], dict) else batches[0][0]',
        'traced = torch.jit.trace(frozen.net if hasattr(frozen, "net") else frozen, example)',
        'with torch.no_grad():',
        '    ref = frozen.net(example) if hasattr(frozen, "net") else frozen(example)',
        '    print("traced max diff %.3g" % (traced(example) - ref).abs().max().item())',
        'torch.jit.save(traced, "traced.pt")',
      );
    },
  },
  {
    id: 'signal.usr1',
    add: (p, r) => {
      p.imports.add('import os');
      p.imports.add('import signal');
      const at = r.int(5, 30);
      p.before.push('requested = []', 'signal.signal(signal.SIGUSR1, lambda signum, frame: requested.append(signum))');
      p.step.push(
        `if step == ${at}:`,
        '    os.kill(os.getpid(), signal.SIGUSR1)',
        'if requested:',
        '    requested.clear()',
        '    torch.save({"step": step, "model": model.state_dict()}, "preempt.pt")',
        '    print("checkpoint requested at step", step)',
      );
    },
  },
  {
    id: 'signal.dispositions',
    add: (p) => {
      p.imports.add('import signal');
      p.after.push(
        'print("handlers", [getattr(h, "__qualname__", str(h)) for h in map(signal.getsignal, (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGCHLD, signal.SIGPIPE))])',
      );
    },
  },
  {
    id: 'files.save',
    add: (p) => {
      p.imports.add('import json');
      p.after.push(
        'torch.save(model.state_dict(), "model.pt")',
        'with open("metrics.json", "w") as f:',
        '    json.dump({"steps": STEPS, "loss": round(loss.item(), 6)}, f)',
      );
    },
  },
  {
    id: 'files.rolling',
    add: (p, r) => {
      const every = r.pick([8, 16]);
      p.step.push(
        `if step % ${every} == ${every - 1}:`,
        '    torch.save({"step": step, "model": model.state_dict(), "opt": opt.state_dict()}, "last.pt")',
      );
    },
  },
  {
    id: 'thread.writer',
    add: (p) => {
      p.imports.add('import queue');
      p.imports.add('import threading');
      p.defs.push(
        'def writer(q):',
        '    with open("losses.txt", "w") as f:',
        '        while True:',
        '            item = q.get()',
        '            if item is None:',
        '                return',
        '            f.write("%d %.6f\\n" % item)',
      );
      p.before.push('q = queue.Queue()', 'thread = threading.Thread(target=writer, args=(q,), name="loss-writer")', 'thread.start()');
      p.step.push('q.put((step, loss.item()))');
      p.after.push('q.put(None)', 'thread.join()', 'print("threads", sorted(t.name for t in threading.enumerate()))');
    },
  },
];

/** How a program ends: the last lines of main(); `blockedBy` as for behaviours. */
const ENDINGS = [
  { id: 'end.zero', lines: () => ['print("finished")'] },
  { id: 'end.status', lines: (r) => ['sys.stdout.flush()', `sys.exit(${r.int(2, 9)})`], imports: ['import sys'] },
  { id: 'end.exception', lines: () => ['raise RuntimeError("evaluation failed: loss %.6f" % loss.item())'] },
  {
    id: 'end.sigterm',
    // A death by a signal becomes an exit status under doctor (issue 43 item 8).
    blockedBy: () => 'signal_sigterm_self',
    lines: () => [
      'sys.stdout.flush()',
      'signal.signal(signal.SIGTERM, signal.SIG_DFL)',
      'os.kill(os.getpid(), signal.SIGTERM)',
      'time.sleep(5)',
    ],
    imports: ['import os', 'import signal', 'import sys', 'import time'],
  },
];

const DATA = [
  {
    id: 'data.list',
    lines: [
      'batches = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]',
      '',
      'def batch_at(step):',
      '    return batches[step % 8]',
      '',
    ],
    dict: false,
  },
  { id: 'data.loader0', workers: 0, dict: false },
  { id: 'data.loader2', workers: 2, dict: false },
  { id: 'data.dict0', workers: 0, dict: true },
  { id: 'data.dict1', workers: 1, dict: true },
];

const MODELS = [
  { id: 'model.seq', lines: ['model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))'] },
  {
    id: 'model.module',
    defs: [
      'class Net(torch.nn.Module):',
      '    def __init__(self):',
      '        super().__init__()',
      '        self.net = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 1))',
      '',
      '    def forward(self, x):',
      '        return self.net(x)',
    ],
    lines: ['model = Net()'],
  },
];

const OPTIMIZERS = [
  { id: 'opt.sgd', lines: ['opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)'], sched: false, clip: false },
  {
    id: 'opt.adam_step',
    lines: ['opt = torch.optim.Adam(model.parameters(), lr=0.01)', 'sched = torch.optim.lr_scheduler.StepLR(opt, step_size=16, gamma=0.5)'],
    sched: true,
    clip: false,
  },
  { id: 'opt.adamw_clip', lines: ['opt = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.01)'], sched: false, clip: true },
];

const STDOUTS = ['own', 'own', 'pipe', 'slow', 'tee', 'file'];
const STDERRS = ['own', 'own', 'pipe', 'slow', 'file'];

/** Every case a behaviour or ending names as its `blockedBy`, under any arrangement. */
export function blockerCases() {
  const out = new Set();
  for (const b of [...BEHAVIOURS, ...ENDINGS])
    for (const stdout of STDOUTS)
      for (const stderr of STDERRS) {
        const c = b.blockedBy?.({ stdout, stderr }) ?? null;
        if (c !== null) out.add(c);
      }
  return out;
}

/** The cases of known-differences.json (names), or null for `--all`. */
export function knownCases(file) {
  if (file === null) return null;
  return new Set(Object.keys(JSON.parse(readFileSync(file, 'utf8')).cases ?? {}));
}

/**
 * The program of `seed`: { name, text, behaviours (ids), stdio, left (behaviours left out: id -> the known case) }.
 * `known`: the cases still listed in known-differences.json (a behaviour blocked by one of them is left out), or
 * null to keep every behaviour.
 */
export function generate(seed, known) {
  const r = rng(seed * 7919 + 17);
  const arr = { stdout: r.pick(STDOUTS), stderr: r.pick(STDERRS) };
  const left = {};
  const allowed = (b) => {
    const by = b.blockedBy?.(arr) ?? null;
    if (by !== null && known?.has(by)) {
      left[b.id] = by;
      return false;
    }
    return true;
  };
  const p = { imports: new Set(['import torch']), defs: [], before: [], step: [], after: [] };
  const data = r.pick(DATA);
  const model = r.pick(MODELS);
  const optim = r.pick(OPTIMIZERS);
  const steps = r.pick([40, 48, 64]);
  // 3 to 6 behaviours, in the pool's order (the order of their code in the program is the pool's, as is the order
  // of their output): a fixed shuffle by the seed picks them.
  const pool = BEHAVIOURS.filter(allowed);
  const count = Math.min(pool.length, r.int(3, 6));
  const chosen = new Set();
  while (chosen.size < count) chosen.add(r.pick(pool));
  const behaviours = pool.filter((b) => chosen.has(b));
  const ending = r.pick(ENDINGS.filter(allowed));

  if (data.id !== 'data.list') {
    p.defs.push(
      'class Samples(torch.utils.data.Dataset):',
      '    def __init__(self):',
      '        g = torch.Generator().manual_seed(1)',
      '        self.x = torch.randn(64, 8, generator=g)',
      '        self.y = torch.randn(64, 1, generator=g)',
      '',
      '    def __len__(self):',
      '        return 64',
      '',
      '    def __getitem__(self, i):',
      data.dict ? '        return {"x": self.x[i], "y": self.y[i], "index": i}' : '        return self.x[i], self.y[i]',
    );
  }
  p.defs.push(
    '',
    '',
    'def forward(model, batch):',
    '    x = batch["x"] if isinstance(batch, dict) else batch[0]',
    '    return model(x)',
    '',
    '',
    'def loss_of(model, batch):',
    '    y = batch["y"] if isinstance(batch, dict) else batch[1]',
    '    return torch.nn.functional.mse_loss(forward(model, batch), y)',
  );
  if (model.defs) p.defs.push('', '', ...model.defs);
  for (const b of behaviours) b.add(p, r);
  for (const i of ending.imports ?? []) p.imports.add(i);

  const main = [`torch.manual_seed(${seed % 1000})`, ...model.lines, ...optim.lines];
  if (data.id === 'data.list') main.push(...data.lines);
  else {
    main.push(
      `loader = torch.utils.data.DataLoader(Samples(), batch_size=8, shuffle=True, num_workers=${data.workers}, generator=torch.Generator().manual_seed(2))`,
      'batches = []',
      'epoch = {}',
      '',
      'def batch_at(step):',
      '    if step % len(loader) == 0:',
      '        epoch["it"] = iter(loader)',
      '    b = next(epoch["it"])',
      '    if len(batches) < 2:',
      '        batches.append(b)',
      '    return b',
      '',
    );
  }
  main.push(...p.before);
  const loop = ['batch = batch_at(step)', 'loss = loss_of(model, batch)', 'opt.zero_grad()', 'loss.backward()'];
  if (optim.clip) loop.push('torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)');
  loop.push('opt.step()');
  if (optim.sched) loop.push('sched.step()');
  loop.push(...p.step);
  main.push('for step in range(STEPS):', ...loop.map((l) => `    ${l}`));
  main.push('print("loss %.6f" % loss.item())', ...p.after, ...ending.lines(r));

  const name = `gen_${seed}`;
  const ids = [data.id, model.id, optim.id, ...behaviours.map((b) => b.id), ending.id];
  const declarations = [];
  if (arr.stdout !== 'own' || arr.stderr !== 'own') declarations.push(`# equivalence: stdio stdout=${arr.stdout} stderr=${arr.stderr}`);
  const leftText = Object.keys(left).length
    ? `\nLeft out while their known difference stands: ${Object.entries(left)
        .map(([b, c]) => `${b} (${c})`)
        .join(', ')}.\n`
    : '';
  const text = [
    `"""Generated by scripts/equivalenceGen.mjs, seed ${seed} (${steps} steps; stdout ${arr.stdout}, stderr ${arr.stderr}):`,
    `${ids.join(', ')}.`,
    leftText,
    ...declarations,
    '"""',
    ...[...p.imports].sort((a, b) => a.replace(/^import /, '').localeCompare(b.replace(/^import /, ''))),
    '',
    `STEPS = ${steps}`,
    '',
    '',
    ...p.defs,
    '',
    '',
    'def main():',
    ...main.map((l) => (l === '' ? '' : `    ${l}`)),
    '',
    '',
    'if __name__ == "__main__":',
    '    main()',
    '',
  ]
    .join('\n')
    .replace(/\n{4,}/g, '\n\n\n');
  return { name, text, behaviours: ids, stdio: arr, left };
}

/** `A-B` or `A,B,C` or `N` (seeds 0..N-1 when `count`), as a list of seeds. */
export function parseSeeds(text) {
  const seeds = [];
  for (const part of String(text).split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`bad seeds '${text}' (want A-B or A,B,C)`);
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    for (let s = a; s <= b; s++) seeds.push(s);
  }
  return seeds;
}

/** Writes the programs of `seeds` into `dir` (created); returns their paths by name. */
export function writePrograms(dir, seeds, known) {
  mkdirSync(dir, { recursive: true });
  const out = {};
  for (const seed of seeds) {
    const g = generate(seed, known);
    const path = join(dir, `${g.name}.py`);
    writeFileSync(path, g.text);
    out[g.name] = path;
  }
  return out;
}

export const DEFAULT_KNOWN = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'test', 'equivalence', 'known-differences.json');

function main(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      seeds: { type: 'string' },
      out: { type: 'string' },
      known: { type: 'string' },
      all: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const usage = 'usage: node scripts/equivalenceGen.mjs --seeds A-B --out DIR [--known FILE | --all]\n';
  if (values.help) {
    process.stdout.write(usage);
    return 0;
  }
  if (!values.seeds || !values.out) {
    process.stderr.write(usage);
    return 2;
  }
  const knownFile = values.all ? null : (values.known ?? DEFAULT_KNOWN);
  if (knownFile !== null && !existsSync(knownFile)) {
    process.stderr.write(`equivalenceGen: ${knownFile}: no such file\n`);
    return 2;
  }
  const paths = writePrograms(values.out, parseSeeds(values.seeds), knownCases(knownFile));
  for (const p of Object.values(paths)) process.stdout.write(`${p}\n`);
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
