/**
 * FLOPs of one call of a convolution CPU op, from what `record_shapes=True` records: the input and weight shapes
 * ("Input Dims") and, since torch 2.1, the scalar arguments as text ("Concrete Inputs": stride, padding, dilation,
 * the backward's output mask). Only the ops under which cuDNN's kernels run are read (the kernels carry their External
 * id, so their time and these FLOPs meet in kernels.ts); their argument lists are ATen's:
 *
 *   cudnn_convolution(input, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)
 *   cudnn_convolution_transpose(input, weight, padding, output_padding, stride, dilation, groups, ...)
 *   convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
 *                        output_padding, groups, output_mask)
 *
 * One pass of a convolution is 2 x N x Cout x (Cin / groups) x kernel area x output positions: the weight holds
 * Cout x Cin/groups x kernel area values, so a pass is 2 x N x weight elements x output positions (input positions for
 * a transposed convolution, whose weight is Cin x Cout/groups x ...). The backward computes up to two such passes, the
 * input's gradient and the weight's, as its output mask says (the first layer's input needs none); the bias gradient
 * is a reduction and not counted. null when a shape or an argument that the count needs was not recorded.
 */

export const CONV_OPS = ['aten::cudnn_convolution', 'aten::cudnn_convolution_transpose', 'aten::convolution_backward'] as const;

export function convFlops(op: string, dims: readonly number[][], concrete: readonly unknown[] | null): number | null {
  switch (op) {
    case 'aten::cudnn_convolution': {
      const [x, w] = dims;
      if (!x || !w || x.length < 3 || w.length !== x.length) return null;
      const padding = intList(concrete?.[2]);
      const stride = intList(concrete?.[3]);
      const dilation = intList(concrete?.[4]);
      const spatial = x.length - 2;
      if (padding?.length !== spatial || stride?.length !== spatial || dilation?.length !== spatial) return null;
      let positions = 1;
      for (let i = 0; i < spatial; i++) {
        const k = w[i + 2]!;
        if (!(stride[i]! > 0)) return null;
        const out = Math.floor((x[i + 2]! + 2 * padding[i]! - dilation[i]! * (k - 1) - 1) / stride[i]!) + 1;
        if (!(out > 0)) return null;
        positions *= out;
      }
      return finite(2 * x[0]! * product(w) * positions);
    }
    case 'aten::cudnn_convolution_transpose': {
      const [x, w] = dims;
      if (!x || !w || x.length < 3 || w.length !== x.length) return null;
      return finite(2 * x[0]! * product(w) * product(x.slice(2)));
    }
    case 'aten::convolution_backward': {
      const [gradOut, x, w] = dims;
      if (!gradOut || !x || !w || x.length < 3 || w.length !== x.length || gradOut.length !== x.length) return null;
      const transposed = concrete?.[7];
      const mask = boolList(concrete?.[10]);
      if ((transposed !== 'False' && transposed !== 'True') || mask === null || mask.length < 2) return null;
      const passes = (mask[0] ? 1 : 0) + (mask[1] ? 1 : 0);
      // The forward's output positions: grad_output's for a convolution, the input's for a transposed one.
      const positions = product((transposed === 'True' ? x : gradOut).slice(2));
      return finite(passes * 2 * x[0]! * product(w) * positions);
    }
    default:
      return null;
  }
}

function finite(flops: number): number | null {
  return Number.isFinite(flops) && flops >= 0 ? flops : null;
}

function product(xs: readonly number[]): number {
  let p = 1;
  for (const x of xs) p *= x;
  return p;
}

/** "[2, 2]" -> [2, 2]; null for anything else. */
function intList(v: unknown): number[] | null {
  if (typeof v !== 'string' || !/^\[\s*\d+(\s*,\s*\d+)*\s*\]$/.test(v)) return null;
  return v.slice(1, -1).split(',').map(Number);
}

/** "[True, True, False]" -> [true, true, false]; null for anything else. */
function boolList(v: unknown): boolean[] | null {
  if (typeof v !== 'string' || !/^\[\s*(True|False)(\s*,\s*(True|False))*\s*\]$/.test(v)) return null;
  return v
    .slice(1, -1)
    .split(',')
    .map((s) => s.trim() === 'True');
}
