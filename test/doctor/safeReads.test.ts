/**
 * The probe's reads of the script's objects (python/gpuwise/probe/safe.py) and its hooks (hooks.py), run for real:
 * objects that log every property, `__getattr__`, `__getattribute__`, `__class__`, overridden method and
 * `__torch_function__` call are read through safe.py and must log nothing, while what plain data they hold is read;
 * the probe's global hooks go into torch's tables without moving the hook handle id counter.
 */
import { describe, expect, it } from 'vitest';
import { PROBE_ROOT, PYTHON, SKIP_PYTHON, pyEnv, runProcess } from './helpers.js';

const run = async (lines: string[]) => {
  const r = await runProcess(PYTHON, ['-c', [`import sys; sys.path.insert(0, ${JSON.stringify(PROBE_ROOT)})`, ...lines].join('\n')], pyEnv({}));
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return r.stdout.trim().split('\n');
};

describe('safe reads of the script objects (probe/safe.py)', () => {
  it('reads plain data and runs none of the objects own code', async () => {
    const out = await run([
      'from gpuwise.probe import safe',
      'log = []',
      'class Meta(type):',
      '    def __instancecheck__(cls, obj): log.append("instancecheck"); return True',
      'class Proxy(metaclass=Meta):',
      '    flag = True',
      '    def __init__(self): object.__setattr__(self, "x", 3)',
      '    def __getattribute__(self, n): log.append("getattribute:" + n); return object.__getattribute__(self, n)',
      '    def __getattr__(self, n): log.append("getattr:" + n); return 0',
      '    @property',
      '    def config(self): log.append("property"); return 1',
      'class Tracked(dict):',
      '    def __getitem__(self, k): log.append("getitem"); return super().__getitem__(k)',
      '    def get(self, k, d=None): log.append("get"); return d',
      '    def values(self): log.append("values"); return super().values()',
      '    def items(self): log.append("items"); return super().items()',
      '    def __iter__(self): log.append("iter"); return super().__iter__()',
      'class Seq(list):',
      '    def __getitem__(self, i): log.append("seq"); return super().__getitem__(i)',
      '    def __len__(self): log.append("len"); return 0',
      'p = Proxy()',
      'print("attr", safe.attr(p, "x"), safe.attr(p, "flag"), safe.attr(p, "config"), safe.attr(p, "missing", "-"))',
      'print("is_a", safe.is_a(p, dict), safe.type_name(p))',
      'd = Tracked(a=1, input_ids=2)',
      'print("dict", safe.get(d, "input_ids"), safe.values(d), safe.items(d))',
      's = Seq([5, 6, 7])',
      'print("seq", safe.first(s), safe.head(s, 2), safe.length(s))',
      'print("log", log)',
    ]);
    expect(out).toEqual([
      'attr 3 True None -',
      'is_a False Proxy',
      "dict 2 [1, 2] [('a', 1), ('input_ids', 2)]",
      'seq 5 [5, 6] 3',
      'log []',
    ]);
  });

  it.skipIf(SKIP_PYTHON)('walks a module through its own tables and reads tensors with __torch_function__ off; an uninitialized lazy parameter is left out', async () => {
    const out = await run([
      'import collections, torch, warnings',
      'from gpuwise.probe import safe',
      'warnings.simplefilter("ignore")  # (LazyLinear says it is new)',
      'calls = collections.Counter()',
      'class P(torch.nn.Parameter):',
      '    @classmethod',
      '    def __torch_function__(cls, f, t, a=(), k=None):',
      '        calls[str(f)] += 1',
      '        return super().__torch_function__(f, t, a, k or {})',
      'class Net(torch.nn.Module):',
      '    def __init__(self):',
      '        super().__init__()',
      '        self.a = torch.nn.Linear(2, 3)',
      '        self.lazy = torch.nn.LazyLinear(4)',
      '        self.a.bias = P(torch.zeros(3))',
      '    def parameters(self, recurse=True): calls["parameters"] += 1; return super().parameters(recurse)',
      '    def children(self): calls["children"] += 1; return super().children()',
      'net = Net()',
      'calls.clear()  # (building the model read the parameter: register_parameter checks its grad_fn)',
      'T = safe.Tensors(torch)',
      'with T.disabled():',
      '    facts = [T.facts(p) for p in safe.parameters(net)]',
      'print("names", [n for n, _ in safe.named_modules(net)])',
      'print("facts", [f and (f[0], str(f[1]), f[3]) for f in facts])',
      'print("calls", dict(calls))',
    ]);
    expect(out).toEqual([
      "names ['', 'a', 'lazy']",
      "facts [(6, 'torch.float32', True), (3, 'torch.float32', True), None, None]",
      'calls {}',
    ]);
  });

  it.skipIf(SKIP_PYTHON)('puts global hooks into torch tables without taking a hook handle id', async () => {
    const out = await run([
      'import torch',
      'import torch.nn.modules.module as mm',
      'from torch.utils.hooks import RemovableHandle',
      'from gpuwise.probe import hooks',
      'seen = []',
      'h = hooks.global_forward_pre_hook(torch, lambda m, a: seen.append(type(m).__name__))',
      'g = hooks.global_forward_hook(torch, lambda m, a, o: None, always_call=True)',
      'torch.nn.Linear(2, 2)(torch.ones(1, 2))',
      'print("ids", RemovableHandle.next_id, len(mm._global_forward_pre_hooks), seen)',
      'h.remove(); g.remove(); h.remove()',
      'print("after", RemovableHandle.next_id, len(mm._global_forward_pre_hooks), len(mm._global_forward_hooks))',
      'print("first handle", torch.nn.Linear(2, 2).register_forward_hook(lambda *a: None).id)',
    ]);
    expect(out).toEqual(["ids 0 1 ['Linear']", 'after 0 0 0', 'first handle 0']);
  });
});
