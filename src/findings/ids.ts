/**
 * Every finding's id (pure, a leaf): the one list the rules, memory, doctor and the plan name findings by, so a fix
 * that `includes` another finding's change names it by a checked id, never a free string.
 */
export const FINDING_IDS = [
  // analyze's rules (advice/rules)
  'dataloader-bound',
  'pageable-h2d',
  'host-sync',
  'launch-bound',
  'no-tensor-cores',
  'bf16-weights',
  'misaligned-shapes',
  'gpu-underused',
  'mixed-precision',
  'channels-last',
  'fp16-without-grad-scaler',
  'fusion',
  'attention',
  'dataparallel',
  'ddp-accum-without-no-sync',
  'small-comm-buckets',
  'comm-bound',
  'rank-imbalance',
  'model-parallel-bubble',
  'memory-near-limit',
  'half-master-weights',
  // doctor's own (decode.ts, sharing.ts)
  'decode-batching',
  'decode-autograd',
  'gpu-shared',
  'ranks-share-gpu',
  // memory's (memory/findings.ts)
  'oom-fragmentation',
  'kept-across-steps',
  'forward-without-backward',
  'gradients-during-forward',
  'fragmentation',
] as const;

/**
 * A finding's id: one of FINDING_IDS, an out-of-memory finding by its dominant category (`oom-activations`), or a
 * doctor what-if (`whatif-bigger-batch`).
 */
export type FindingId = (typeof FINDING_IDS)[number] | `oom-${string}` | `whatif-${string}`;
