"""An HF-Trainer-style checkpoint folder written without transformers: checkpoint-N/ with the model weights,
optimizer.pt, scheduler.pt, rng_state.pth (torch, numpy and Python random states: a probe drawing random numbers
shows here), trainer_state.json and training_args.bin (a pickled dataclass), every 32 steps.
"""
import dataclasses
import json
import os
import random

import numpy as np
import torch


@dataclasses.dataclass
class Args:
    output_dir: str = "out"
    learning_rate: float = 5e-3
    save_steps: int = 32
    seed: int = 0


args = Args()
torch.manual_seed(args.seed)
random.seed(args.seed)
np.random.seed(args.seed)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Dropout(0.1), torch.nn.Linear(16, 1))
opt = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 - s / 64)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
step, history = 0, []
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        step += 1
        if step % 8 == 0:
            history.append({"step": step, "loss": round(loss.item(), 6)})
        if step % args.save_steps == 0:
            d = os.path.join(args.output_dir, "checkpoint-%d" % step)
            os.makedirs(d, exist_ok=True)
            torch.save(model.state_dict(), os.path.join(d, "pytorch_model.bin"))
            torch.save(opt.state_dict(), os.path.join(d, "optimizer.pt"))
            torch.save(sched.state_dict(), os.path.join(d, "scheduler.pt"))
            torch.save({"python": random.getstate(), "numpy": np.random.get_state(), "cpu": torch.random.get_rng_state()}, os.path.join(d, "rng_state.pth"))
            with open(os.path.join(d, "trainer_state.json"), "w") as f:
                json.dump({"global_step": step, "log_history": history}, f, indent=2)
            torch.save(args, os.path.join(d, "training_args.bin"))
print("loss %.6f checkpoints %s" % (loss.item(), sorted(os.listdir(args.output_dir))))
