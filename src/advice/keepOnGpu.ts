/**
 * One answer, in every command, to "how do I log the loss": accumulate it
 * detached on the GPU and read it every N steps. `.item()` each step makes the
 * host wait for the GPU (analyze's host-sync), and `running_loss += loss`
 * keeps every step's autograd graph alive (memory's kept-across-steps); a
 * detached GPU accumulator does neither. Pure.
 */
export const ACCUMULATE_ON_GPU_SUMMARY = 'accumulate the loss detached on the GPU and read it (.item()) every N steps, not every step';

export const ACCUMULATE_ON_GPU_CODE = [
  'running_loss += loss.detach()          # not loss.item() every step (a sync), not loss (keeps the graph)',
  'if step % log_every == 0:',
  '    print((running_loss / log_every).item()); running_loss.zero_()',
].join('\n');
