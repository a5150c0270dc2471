/**
 * The fused attention ops PyTorch's `F.scaled_dot_product_attention` dispatches to, as `record_shapes=True` records
 * them, and their model FLOPs. Every backend's op takes query, key and value as `[batch, heads, seq, head_dim]`
 * ("Input Dims"), and its scalar arguments as text ("Concrete Inputs", torch >= 2.1), among them `is_causal`; the ATen
 * signatures (native_functions.yaml, torch 2.2 and later; 2.0/2.1's efficient kernel had fewer arguments):
 *
 *   _scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal, return_debug_mask, *, scale)
 *   _scaled_dot_product_flash_attention_backward(grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k,
 *       max_q, max_k, dropout_p, is_causal, philox_seed, philox_offset, *, scale)
 *   _scaled_dot_product_efficient_attention(query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal,
 *       *, scale)                                   (2.0/2.1: query, key, value, compute_log_sumexp, is_causal)
 *   _scaled_dot_product_efficient_attention_backward(grad_out_, query, key, value, attn_bias, out, logsumexp,
 *       philox_seed, philox_offset, dropout_p, grad_input_mask, is_causal, *, scale)
 *                                                   (2.0/2.1: grad_out_, query, key, value, out, logsumexp, is_causal, ...)
 *   _scaled_dot_product_cudnn_attention(query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal,
 *       return_debug_mask, *, scale)
 *   _scaled_dot_product_cudnn_attention_backward(grad_out, query, key, value, out, logsumexp, philox_seed,
 *       philox_offset, attn_bias, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, *, scale)
 *   _scaled_dot_product_attention_math(query, key, value, attn_mask, dropout_p, is_causal, ...): no fused kernel took
 *       the inputs; it runs as separate matmuls and a softmax (the hand-written pattern, metrics/attention.ts).
 *
 * Model FLOPs of one forward call: the two matmuls, Q·Kᵀ and P·V, 2·B·H·Tq·Tk·(d_qk + d_v); a causal mask over a square
 * score matrix halves them (the fused kernels skip the masked blocks). A backward call does twice the forward's (the
 * four matmuls of dQ, dK, dV, dP; the kernels' recomputation of the scores is not model work, as in MFU's convention).
 */

export type AttentionBackend = 'flash' | 'efficient' | 'cudnn' | 'math';

/** The ops' names after `aten::` (the parser reads their args: parser.ts CPU_OP_WITH_ARGS). */
export const ATTENTION_OP_PATTERN = '_scaled_dot_product_(?:flash|efficient|cudnn)_attention(?:_backward)?|_scaled_dot_product_attention_math';
const OP_RE = new RegExp(`^aten::(?:${ATTENTION_OP_PATTERN})$`);

/** Whether a CPU op is one the builder keeps as an attention op. */
export function isAttentionOp(name: string): boolean {
  return OP_RE.test(name);
}

/** Where `is_causal` sits in the Concrete Inputs, by op and by argument count where versions differ; index 0 = any count. */
const CAUSAL_INDEX: Record<string, [number, number][]> = {
  'aten::_scaled_dot_product_flash_attention': [[0, 4]],
  'aten::_scaled_dot_product_flash_attention_backward': [[0, 11]],
  'aten::_scaled_dot_product_efficient_attention': [
    [5, 4],
    [0, 6],
  ],
  'aten::_scaled_dot_product_efficient_attention_backward': [
    [8, 6],
    [0, 11],
  ],
  'aten::_scaled_dot_product_cudnn_attention': [[0, 6]],
  'aten::_scaled_dot_product_cudnn_attention_backward': [[0, 14]],
  'aten::_scaled_dot_product_attention_math': [[0, 5]],
};

/** `is_causal` of a call from its Concrete Inputs; null when not recorded (torch < 2.1) or not where expected. */
export function attentionCausal(op: string, concrete: readonly unknown[] | null): boolean | null {
  const table = CAUSAL_INDEX[op];
  if (!table || !concrete) return null;
  const index = (table.find(([n]) => n === concrete.length) ?? table.find(([n]) => n === 0))?.[1];
  const v = index === undefined ? undefined : concrete[index];
  return v === 'True' ? true : v === 'False' ? false : null;
}

export function attentionBackend(op: string): AttentionBackend {
  const m = /_(flash|efficient|cudnn)_attention/.exec(op);
  return m ? (m[1] as AttentionBackend) : 'math';
}

export function isBackwardAttentionOp(op: string): boolean {
  return op.endsWith('_backward');
}

/**
 * Model FLOPs of one call of a fused attention op (see the header); null for the math fallback (its matmuls are GEMM
 * ops of their own) or when the shapes are not four-dimensional.
 */
export function attentionOpFlops(op: string, dims: readonly number[][], causal: boolean | null): number | null {
  if (attentionBackend(op) === 'math') return null;
  const backward = isBackwardAttentionOp(op);
  const [q, k, v] = backward ? dims.slice(1, 4) : dims.slice(0, 3);
  if (q?.length !== 4 || k?.length !== 4 || v?.length !== 4) return null;
  const [b, h, tq, dqk] = q as [number, number, number, number];
  const tk = k[2]!;
  const dv = v[3]!;
  const forward = 2 * b * h * tq * tk * (dqk + dv) * (causal === true && tq === tk ? 0.5 : 1);
  const flops = backward ? 2 * forward : forward;
  return Number.isFinite(flops) && flops > 0 ? flops : null;
}
