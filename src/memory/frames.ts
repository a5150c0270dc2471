/**
 * Reading allocation stacks: the user's own source line, and which phase of
 * training (setup, forward, backward, optimizer step, zero_grad) a stack shows.
 *
 * Frame lists are shared by many entries, so both answers are cached per list.
 * Stacks recorded with `stacks="all"` hold C++ frames (innermost first) with
 * the Python frames interleaved; `stacks="python"` holds Python frames only.
 */
import type { Frame } from './snapshot.js';

/** Where an allocation came from. */
export interface SourceLine {
  /** `file:line` (or `autograd: NodeName`) for grouping and display. */
  key: string;
  filename: string;
  line: number;
  /** Function name of that frame (empty for the autograd node, which the key names). */
  name: string;
  /**
   * 'user': a file outside installed packages; 'library': an installed package other than torch;
   * 'autograd': no Python frame, but the C++ stack names the backward node; 'unknown': neither.
   */
  kind: 'user' | 'library' | 'autograd' | 'unknown';
}

export type StackPhase = 'setup' | 'forward' | 'backward' | 'optimizer' | 'zero_grad' | 'unknown';

const UNKNOWN_SOURCE: SourceLine = { key: '(no Python frame recorded)', filename: '', line: 0, name: '', kind: 'unknown' };

/**
 * A notebook cell's code: IPython names it `<ipython-input-N-HASH>`, ipykernel (6+) `/tmp/ipykernel_PID/HASH.py`. The
 * user's own code, though it is no file of theirs.
 */
const CELL_RE = /^<ipython-input-\d+-[0-9a-f]+>$|[\\/]ipykernel_\d+[\\/]\d+\.py$/;
const isCell = (filename: string): boolean => CELL_RE.test(filename);
const isPython = (f: Frame): boolean => f.line > 0 && (f.filename.endsWith('.py') || isCell(f.filename));
/**
 * Frames between the user's code and torch that are nobody's code to change: the notebook's machinery (IPython runs a
 * cell through `run_code`; ipykernel, traitlets, tornado, zmq around it) and gpuwise's own probe and notebook magic,
 * which wrap backward, the optimizer step and the DataLoader. A notebook's OOM named `interactiveshell.py (run_code)`
 * and `gpuwise/probe.py (backward)` as its largest sources (issue 47): the cell is the line to change.
 */
const TOOLING_RE =
  /[\\/](IPython|ipykernel|ipython_genutils|jupyter_client|jupyter_core|traitlets|tornado|zmq|debugpy|comm)[\\/]|[\\/]gpuwise[\\/](probe([\\/]|\.py$)|boot[\\/]|notebook\.py$|transport\.py$|_command\.py$|__init__\.py$|__main__\.py$)/;
/** torch itself, the standard library (outside site-packages), frozen importlib and `<string>`-like pseudo files. */
const TORCH_OR_STDLIB_RE = /[\\/]torch[\\/]|^<|[\\/]lib[\\/]python\d+(\.\d+)?[\\/](?!site-packages[\\/]|dist-packages[\\/])/;
const PACKAGE_RE = /[\\/](site-packages|dist-packages)[\\/]/;
/** Backward-node names in C++ frames, e.g. `torch::autograd::generated::MmBackward0::apply`. */
const AUTOGRAD_NODE_RE = /torch::autograd::generated::(\w+?Backward\d*)(?:_apply_functional|::apply)/;

const sourceCache = new WeakMap<readonly Frame[], SourceLine>();

/**
 * The first frame outside torch, the standard library and the tooling around the user's code (innermost first): in a
 * notebook, the cell. Without any such frame, the first tooling frame (an allocation of the tooling's own); without any
 * Python frame (the autograd engine's thread), the backward node that allocated.
 */
export function sourceLineOf(frames: readonly Frame[]): SourceLine {
  if (frames.length === 0) return UNKNOWN_SOURCE;
  const hit = sourceCache.get(frames);
  if (hit) return hit;
  let found: SourceLine | null = null;
  let tooling: Frame | null = null;
  let node: string | null = null;
  for (const f of frames) {
    if (isPython(f)) {
      if (isCell(f.filename)) {
        found = { key: `${f.filename}:${f.line}`, filename: f.filename, line: f.line, name: f.name, kind: 'user' };
        break;
      }
      if (TOOLING_RE.test(f.filename)) tooling ??= f;
      else if (!TORCH_OR_STDLIB_RE.test(f.filename)) {
        found = { key: `${f.filename}:${f.line}`, filename: f.filename, line: f.line, name: f.name, kind: PACKAGE_RE.test(f.filename) ? 'library' : 'user' };
        break;
      }
    } else if (node === null) {
      const m = AUTOGRAD_NODE_RE.exec(f.name);
      if (m) node = m[1]!;
    }
  }
  if (!found && tooling) found = { key: `${tooling.filename}:${tooling.line}`, filename: tooling.filename, line: tooling.line, name: tooling.name, kind: 'library' };
  const result = found ?? (node !== null ? { key: `autograd: ${node}`, filename: '', line: 0, name: '', kind: 'autograd' as const } : UNKNOWN_SOURCE);
  sourceCache.set(frames, result);
  return result;
}

const phaseCache = new WeakMap<readonly Frame[], StackPhase>();

/**
 * The training phase a stack shows, from the frames that only appear there:
 * the autograd engine or `backward()` for backward, `torch/optim` for the
 * optimizer (its `zero_grad` separately), a module's `forward` or `_call_impl`
 * for forward, module construction or `.to()`/`.cuda()` for setup.
 */
export function phaseOf(frames: readonly Frame[]): StackPhase {
  if (frames.length === 0) return 'unknown';
  const hit = phaseCache.get(frames);
  if (hit) return hit;
  let phase: StackPhase = 'unknown';
  let sawForward = false;
  let sawSetup = false;
  for (const f of frames) {
    const file = f.filename;
    const name = f.name;
    if (name === 'zero_grad' && /[\\/]torch[\\/](optim|nn[\\/]modules)[\\/]/.test(file)) {
      phase = 'zero_grad';
      break;
    }
    if (/[\\/]torch[\\/]optim[\\/]/.test(file)) {
      phase = 'optimizer';
      break;
    }
    if (
      name.startsWith('torch::autograd::Engine::') ||
      name.includes('torch::autograd::AccumulateGrad') ||
      name === '_engine_run_backward' ||
      (name === 'backward' && /[\\/]torch[\\/](_tensor|autograd[\\/]__init__)\.py$/.test(file))
    ) {
      phase = 'backward';
      break;
    }
    if (isPython(f)) {
      if ((name === '_call_impl' || name === '_wrapped_call_impl') && /[\\/]torch[\\/]nn[\\/]modules[\\/]module\.py$/.test(file)) sawForward = true;
      else if (name === 'forward') sawForward = true;
      else if (
        (/^(_apply|to|cuda)$/.test(name) && /[\\/]torch[\\/]nn[\\/]modules[\\/]module\.py$/.test(file)) ||
        /^(reset_parameters|_init_weights|init_weights|post_init|load_state_dict|_load_from_state_dict|from_pretrained)$/.test(name) ||
        (name === '__init__' && /[\\/](torch[\\/]nn[\\/]modules|transformers[\\/]models)[\\/]/.test(file))
      )
        sawSetup = true;
    }
  }
  // A forward frame wins over setup frames above it (e.g. a lazy module built during forward).
  if (phase === 'unknown') phase = sawForward ? 'forward' : sawSetup ? 'setup' : 'unknown';
  phaseCache.set(frames, phase);
  return phase;
}

const gradAccCache = new WeakMap<readonly Frame[], boolean>();

/** Whether the stack passes through the gradient accumulation node (only visible in C++ stacks). */
export function isGradAccumulation(frames: readonly Frame[]): boolean {
  if (frames.length === 0) return false;
  let hit = gradAccCache.get(frames);
  if (hit === undefined) {
    hit = frames.some((f) => f.name.includes('AccumulateGrad'));
    gradAccCache.set(frames, hit);
  }
  return hit;
}

const pythonCache = new WeakMap<readonly Frame[], boolean>();

/** Whether any frame is Python code (the autograd engine's thread has none). */
export function hasPythonFrame(frames: readonly Frame[]): boolean {
  if (frames.length === 0) return false;
  let hit = pythonCache.get(frames);
  if (hit === undefined) {
    hit = frames.some((f) => f.filename.endsWith('.py') || isCell(f.filename));
    pythonCache.set(frames, hit);
  }
  return hit;
}

/** What a source line is, for the reports' headings. */
export const SOURCE_LINE_WORDS = "your code's first frame: torch, the standard library, a notebook's machinery and gpuwise's probe skipped";

/** A source line for display: `dir/file.py:12`, a notebook cell as such, the key where there is no file. */
export function shortSource(s: SourceLine): string {
  if (s.filename === '') return s.key;
  return `${isCell(s.filename) ? 'notebook cell ' : ''}${shortPath(s.filename)}:${s.line}`;
}

/** Shortens a path for display: the last `parts` components. */
export function shortPath(filename: string, parts = 2): string {
  const bits = filename.split(/[\\/]/);
  return bits.length <= parts ? filename : bits.slice(-parts).join('/');
}
