"""minGPT's chargpt at GPT-2 size, with the levers a plan names applied as a user would (--amp bf16: autocast around the
forward; --sdpa: F.scaled_dot_product_attention in place of the attention written out; --compile: torch.compile of the
model), trained with minGPT's own Trainer. Prints one JSON line: the mean of steps after --warmup by its own clock."""
import argparse, json, math, sys, time, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "mingpt"))
import torch
import torch.nn.functional as F
from mingpt.model import GPT, CausalSelfAttention
from mingpt.trainer import Trainer
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "mingpt", "projects", "chargpt"))
from chargpt import CharDataset

ap = argparse.ArgumentParser()
ap.add_argument("--text", required=True)
ap.add_argument("--steps", type=int, default=60)
ap.add_argument("--warmup", type=int, default=15)
ap.add_argument("--batch", type=int, default=32)
ap.add_argument("--block", type=int, default=256)
ap.add_argument("--amp", default="")
ap.add_argument("--sdpa", action="store_true")
ap.add_argument("--compile", action="store_true")
a = ap.parse_args()

if a.sdpa:
    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.attn_dropout.p if self.training else 0.0)
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))
    CausalSelfAttention.forward = forward

dcfg = CharDataset.get_default_config(); dcfg.block_size = a.block
data = CharDataset(dcfg, open(a.text).read())
mcfg = GPT.get_default_config(); mcfg.model_type = "gpt2"; mcfg.vocab_size = data.get_vocab_size(); mcfg.block_size = a.block
model = GPT(mcfg)
tcfg = Trainer.get_default_config(); tcfg.max_iters = a.steps; tcfg.batch_size = a.batch; tcfg.num_workers = 2; tcfg.learning_rate = 5e-4
if a.amp == "bf16":
    inner = model.forward
    def fwd(*args, **kw):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return inner(*args, **kw)
    model.forward = fwd
net = torch.compile(model) if a.compile else model
if a.compile:
    net.configure_optimizers = model.configure_optimizers
trainer = Trainer(tcfg, net, data)
events = []
def on_end(tr):
    e = torch.cuda.Event(enable_timing=True)
    e.record()
    events.append(e)
trainer.add_callback("on_batch_end", on_end)
trainer.run()
torch.cuda.synchronize()
d = [s.elapsed_time(e) / 1000 for s, e in zip(events[a.warmup:], events[a.warmup + 1:])]
print(json.dumps({"script": "mingpt", "args": vars(a), "steps": len(d), "mean_step_ms": 1000 * sum(d) / max(1, len(d))}))
