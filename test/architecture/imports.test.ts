/**
 * The architecture as a check (ARCHITECTURE.md): the pure core imports no Node built-in and no shell module, directly
 * or through another module; each shell folder imports only the core and the shells below it (io < live < serve <
 * cli); the module graph has no cycle, nor the graph of folders (static and lazy imports alike). Reads the sources'
 * import statements: the same graph esbuild and tsc see, without building anything.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FINDING_IDS } from '../../src/findings/ids.js';
import { GPU_WORK, HOST_WORK } from '../../src/pace/work.js';
import { sources } from './sources.js';

const SRC = resolve(__dirname, '..', '..', 'src');

/** Folders of the pure core: data in, data out; they could run in a browser. */
const CORE = ['trace', 'advice', 'findings', 'gpus', 'report', 'planner', 'memory', 'doctor', 'history', 'tune', 'run', 'util', 'telemetry', 'pace'];
/** Shell modules inside a core folder, each named (none since telemetry's readers moved to live/). */
const SHELLS_IN_CORE = new Set<string>([]);
/**
 * The shell folders, lowest first, each with the shell folders it may import besides the core (type imports too: they
 * are the design's dependencies). io reads and writes files and processes for everyone; live reads the GPUs; serve is
 * the dashboard and the `--html` pages; cli dispatches and may use them all. No shell imports cli.
 */
const SHELL_DEPS: Record<string, string[]> = {
  io: [],
  live: ['io'],
  serve: ['io', 'live'],
  cli: ['io', 'live', 'serve'],
};
/** Pure folders inside a shell folder: data in, HTML out (every `--html` page), so they import the core only. */
const PURE_IN_SHELL = ['serve/pages/'];

const BUILTINS = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);


interface Edge {
  to: string;
  /** `import type` / `export type`: gone at run time, but still a dependency of the design. */
  typeOnly: boolean;
}

/** Every module specifier a file imports or re-exports, statically or lazily (`import('...')`). */
function importsOf(file: string): Edge[] {
  const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const out: Edge[] = [];
  for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?[^'"]*?\sfrom\s+['"]([^'"]+)['"]/gm))
    out.push({ to: m[3] as string, typeOnly: Boolean(m[2]) });
  for (const m of text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)) out.push({ to: m[1] as string, typeOnly: false });
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push({ to: m[1] as string, typeOnly: false });
  return out;
}

const files = sources(SRC);
/** A source without its comments: what the checks below read. */
const strip = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
const rel = (f: string) => relative(SRC, f);
const graph = new Map<string, { spec: string; target: string | null; typeOnly: boolean }[]>();
for (const f of files)
  graph.set(
    rel(f),
    importsOf(f).map(({ to, typeOnly }) => ({
      spec: to,
      typeOnly,
      target: to.startsWith('.') ? rel(resolve(dirname(f), to.replace(/\.js$/, '.ts'))) : null,
    })),
  );

const isCore = (f: string) => CORE.includes(f.split('/')[0] as string) && !SHELLS_IN_CORE.has(f);
const folderOf = (f: string) => f.split('/')[0] as string;

describe('the pure core', () => {
  it('has its modules where the test looks (the graph is read)', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get('doctor/rankSummary.ts')?.some((e) => e.target === 'run/steps.ts')).toBe(true);
  });

  it('imports no Node built-in, no npm package and no shell module, in any core folder', () => {
    const bad: string[] = [];
    for (const [f, edges] of graph) {
      if (!isCore(f)) continue;
      for (const e of edges) {
        if (e.target === null) {
          if (!e.typeOnly) bad.push(`${f} imports ${BUILTINS.has(e.spec) ? 'the Node built-in' : 'the package'} ${e.spec}`);
        } else if (!isCore(e.target) && !e.typeOnly) bad.push(`${f} imports the shell module ${e.target}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('advice reaches the planner only through the GPU catalogue', () => {
    const bad = [...graph].flatMap(([f, edges]) =>
      f.startsWith('advice/') ? edges.filter((e) => e.target?.startsWith('planner/')).map((e) => `${f} -> ${e.target}`) : [],
    );
    expect(bad).toEqual([]);
  });
});

describe('the shells', () => {
  it('every folder under src/ is core or a shell, none both', () => {
    const folders = readdirSync(SRC, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    expect(folders.filter((d) => !CORE.includes(d) && !(d in SHELL_DEPS))).toEqual([]);
    expect(folders.filter((d) => CORE.includes(d) && d in SHELL_DEPS)).toEqual([]);
    expect(Object.keys(SHELL_DEPS).filter((d) => !folders.includes(d))).toEqual([]);
  });

  it('each shell imports only the core and the shells below it (io < live < serve < cli): none reaches sideways or up', () => {
    const bad: string[] = [];
    for (const [f, edges] of graph) {
      const allowed = SHELL_DEPS[folderOf(f)];
      if (allowed === undefined) continue;
      for (const e of edges) {
        if (e.target === null || isCore(e.target)) continue;
        const to = folderOf(e.target);
        if (to !== folderOf(f) && !allowed.includes(to)) bad.push(`${f} -> ${e.target}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('the pages inside serve/ are pure: no Node built-in, no package, nothing of a shell but other pages', () => {
    const bad: string[] = [];
    for (const [f, edges] of graph) {
      const pure = PURE_IN_SHELL.find((p) => f.startsWith(p));
      if (pure === undefined) continue;
      for (const e of edges) {
        if (e.target === null) {
          if (!e.typeOnly) bad.push(`${f} imports ${e.spec}`);
        } else if (!isCore(e.target) && !e.target.startsWith(pure)) bad.push(`${f} -> ${e.target}`);
      }
    }
    expect(bad).toEqual([]);
  });
});

describe('one model of the step\'s pace (src/pace/)', () => {
  it('makes every step-time gain: no module outside pace/ builds an EstimatedGain', () => {
    // A gain is built by writing its expected step (an object literal's `expectedStepTimeNs:` with a value, not a type).
    const bad = files
      .filter((f) => !rel(f).startsWith('pace/'))
      .flatMap((f) => {
        const text = readFileSync(f, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
        return [...text.matchAll(/\bexpectedStepTimeNs\s*:\s*(?![\s]|number\b)[^;,}\n]*/g)].map((m) => `${rel(f)}: ${m[0]}`);
      });
    expect(bad).toEqual([]);
  });

  it('makes every step-time gain: no module outside pace/ rewrites a gain it got (a spread of a gain with a figure or the arithmetic replaced)', () => {
    // `{ ...gain, arithmetic: ... }` keeps pace's figures under words pace did not write; the words belong in the fix.
    const bad = files
      .filter((f) => !rel(f).startsWith('pace/'))
      .flatMap((f) => {
        const text = strip(readFileSync(f, 'utf8'));
        return [...text.matchAll(/\{\s*\.\.\.\s*[\w.?]*[gG]ain\b[^,}]*,\s*(arithmetic|stepTimeNs|expectedStepTimeNs|savedFraction|boundNow|boundAfter)\s*:/g)].map(
          (m) => `${rel(f)}: ${m[0].replace(/\s+/g, ' ')}`,
        );
      });
    expect(bad).toEqual([]);
  });

  it('makes every expected step on the run\'s pipeline: no whole-step gain or fix on a bare measured step outside pace/', () => {
    // doctor/decode.ts had its own batching model there (the step kept while the GPU's work k-fold fitted in it); its
    // batching is pace's batch op on the run's pipeline now (pace/batch.ts), as every fix's gain.
    const bad = files
      .filter((f) => !rel(f).startsWith('pace/'))
      .filter((f) => /\bwholeStep(Gain|Fix)\s*\(/.test(strip(readFileSync(f, 'utf8'))))
      .map(rel);
    expect(bad).toEqual([]);
  });

  it('has one batch model: no module outside pace/ scales a step, a GPU time or a busy time by a batch multiple', () => {
    // A batch change is pace's batch op (pace/batch.ts: what of the GPU's work grows with the batch); a rule or a
    // what-if names the multiple in a fix and reads the step off the pipeline. `busy * k <= stepNs` was decode.ts's own.
    const scaling = /\b\w*(busy|step|gpu)\w*\s*\*\s*(k|x|kIn|scale|batchScale)\b|\b(k|kIn|scale|batchScale)\s*\*\s*\w*(busy|step|gpu)\w*/gi;
    const bad = files
      .filter((f) => !rel(f).startsWith('pace/'))
      .flatMap((f) => [...strip(readFileSync(f, 'utf8')).matchAll(scaling)].map((m) => `${rel(f)}: ${m[0]}`));
    expect(bad).toEqual([]);
  });

  it("has one step model a what-if: the what-ifs never reduce two estimates to one (planner's and pace's)", () => {
    // doctor/whatIfs.ts took Math.min(planner factor, pace factor) for a batch change: two step models, the smaller
    // winning. A batch change is pace's where the pipeline times the GPU, the planner's elsewhere and for the changes
    // pace cannot make; a min or max of two variables there is two models again.
    const text = strip(readFileSync(join(SRC, 'doctor', 'whatIfs.ts'), 'utf8'));
    const bad = [...text.matchAll(/Math\.(min|max)\(\s*([a-z]\w*)\s*,\s*([a-z]\w*)\s*\)/g)].map((m) => m[0]);
    expect(bad).toEqual([]);
    expect(text).toMatch(/\bbatchThroughputFactor\(/);
  });

  it('names work items by a closed type per stage: no string-keyed work item, no `host:` key prefix', () => {
    const fixText = strip(readFileSync(join(SRC, 'pace', 'fix.ts'), 'utf8'));
    const pipelineText = strip(readFileSync(join(SRC, 'pace', 'pipeline.ts'), 'utf8'));
    // FixOp's work items and the pipeline's record of what is left of them are typed by stage (pace/work.ts)
    expect(fixText).toMatch(/kind: 'gpu'; work: GpuWork;/);
    expect(fixText).toMatch(/kind: 'host'; work: HostWork;/);
    expect(fixText).not.toMatch(/\bwork\s*:\s*string\b/);
    expect(pipelineText).toMatch(/\bwork: WorkLeft;/);
    expect(pipelineText).not.toMatch(/\bwork\s*:\s*Record<string/);
    const known = new Set<string>([...GPU_WORK, ...HOST_WORK]);
    const bad = files.flatMap((f) => {
      const text = strip(readFileSync(f, 'utf8'));
      return [
        // a stage's prefix in a key (`host:${op.work}`): the stage is the record's, not the string's
        ...[...text.matchAll(/[`'"](host|gpu):\$\{/g)].map((m) => `${rel(f)}: key prefix ${m[0]}`),
        // a work item named in a fix op that no stage lists
        ...[...text.matchAll(/kind: '(gpu|host)'(?: as const)?, work: '([^']+)'/g)].filter((m) => !known.has(m[2] as string)).map((m) => `${rel(f)}: work '${m[2]}'`),
        // another finding named by a free string where a fix includes it
        ...[...text.matchAll(/\bincludes: \[([^\]]*)\]/g)].flatMap((m) =>
          [...(m[1] as string).matchAll(/'([^']+)'/g)].filter((x) => !(FINDING_IDS as readonly string[]).includes(x[1] as string)).map((x) => `${rel(f)}: includes '${x[1]}'`),
        ),
      ];
    });
    expect(bad).toEqual([]);
  });

  it('the rules reach it, and it reaches no rule (the fixes are data the rules hand over)', () => {
    expect([...graph.keys()].filter((f) => f.startsWith('pace/')).length).toBeGreaterThanOrEqual(5);
    const bad = [...graph].flatMap(([f, edges]) =>
      f.startsWith('pace/') ? edges.filter((e) => e.target?.startsWith('advice/') || e.target?.startsWith('doctor/')).map((e) => `${f} -> ${e.target}`) : [],
    );
    expect(bad).toEqual([]);
  });
});

describe('the module graph', () => {
  it('has no import cycle', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (f: string) => {
      state.set(f, 'open');
      stack.push(f);
      for (const e of graph.get(f) ?? []) {
        if (e.target === null || !graph.has(e.target)) continue;
        const s = state.get(e.target);
        if (s === 'open') cycles.push([...stack.slice(stack.indexOf(e.target)), e.target].join(' -> '));
        else if (s === undefined) visit(e.target);
      }
      stack.pop();
      state.set(f, 'done');
    };
    for (const f of graph.keys()) if (!state.has(f)) visit(f);
    expect(cycles).toEqual([]);
  });

  it('has no cycle between folders (value imports: what runs; the shells\' type imports are held by their layering)', () => {
    // Type imports are left out: the core's findings/ and pace/ name each other's types (a Finding carries its Fix).
    const folders = new Map<string, Set<string>>();
    for (const [f, edges] of graph)
      for (const e of edges)
        if (e.target !== null && !e.typeOnly && folderOf(e.target) !== folderOf(f))
          folders.set(folderOf(f), (folders.get(folderOf(f)) ?? new Set()).add(folderOf(e.target)));
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (d: string) => {
      state.set(d, 'open');
      stack.push(d);
      for (const to of folders.get(d) ?? []) {
        const s = state.get(to);
        if (s === 'open') cycles.push([...stack.slice(stack.indexOf(to)), to].join(' -> '));
        else if (s === undefined) visit(to);
      }
      stack.pop();
      state.set(d, 'done');
    };
    for (const d of folders.keys()) if (!state.has(d)) visit(d);
    expect(folders.size).toBeGreaterThan(10);
    expect(cycles).toEqual([]);
  });
});
