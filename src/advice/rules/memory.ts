/** Memory rule from the `[memory]` events that profile_memory=True records. */
import { fmtBytes, fmtPct } from '../../util/format.js';
import { finding, type RankRule } from './rule.js';

const NEAR_LIMIT_SHARE = 0.9;

export const memoryNearLimit: RankRule = (m) => {
  const worst = m.memory
    .map((mem) => ({ mem, total: mem.deviceTotalBytes ?? 0 }))
    .filter((x) => x.total > 0)
    .sort((a, b) => b.mem.peakReservedBytes / b.total - a.mem.peakReservedBytes / a.total)[0];
  if (!worst || worst.mem.peakReservedBytes / worst.total < NEAR_LIMIT_SHARE) return null;
  const { mem, total } = worst;
  return finding({
    id: 'memory-near-limit',
    title: `GPU ${mem.device} memory is ${fmtPct(mem.peakReservedBytes / total)} full at its peak`,
    ranks: [m.rank],
    evidence: [
      `peak reserved ${fmtBytes(mem.peakReservedBytes)} of ${fmtBytes(total)} (${fmtPct(mem.peakReservedBytes / total)}), peak allocated ${fmtBytes(mem.peakAllocatedBytes)}`,
      `reserved but unallocated at the peak: ${fmtBytes(mem.peakReservedBytes - mem.peakAllocatedBytes)} (allocator cache and fragmentation)`,
    ],
    data: {
      device: mem.device,
      peakReservedBytes: mem.peakReservedBytes,
      peakAllocatedBytes: mem.peakAllocatedBytes,
      deviceTotalBytes: total,
    },
    recommendation: {
      summary:
        'Close to out of memory: the allocator may be retrying cudaMalloc (slow) and a longer sequence will fail. Reduce activations (checkpointing, smaller micro-batch with accumulation) or state (bf16/8-bit optimizer, FSDP), and cut fragmentation. `gpuwise memory` on a snapshot shows what is live at the peak.',
      code: [
        'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python train.py',
        'from torch.utils.checkpoint import checkpoint  # per block: x = checkpoint(block, x, use_reentrant=False)',
      ].join('\n'),
    },
    estimatedGain: null,
  });
};
