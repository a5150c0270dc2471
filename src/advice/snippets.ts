/**
 * Plain PyTorch lines that several fixes show (the findings' code, doctor's what-ifs, tune's permanent change), each
 * written once here so that a user meets the same lines wherever the fix is named.
 */

/**
 * The forward and the loss under autocast. The example line is marked as one: loops differ (a model may take its
 * targets and return the loss, as minGPT's `model(idx, targets)` does), and the lines that go inside are the loop's own.
 */
export function autocastLines(dtype: 'bfloat16' | 'float16'): string[] {
  return [
    `with torch.autocast("cuda", dtype=torch.${dtype}):`,
    '    # your forward and loss as they are',
    '    loss = loss_fn(model(x), y)   # for example',
  ];
}
