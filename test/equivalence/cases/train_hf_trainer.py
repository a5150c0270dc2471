"""A tiny BERT classifier (random init, no download) trained by transformers.Trainer on the CPU for 64 steps with a
checkpoint every 32, where transformers is installed (checked before torch is imported; the same skip line in
both runs where it is not). Checkpoints go to a temporary folder; the checkpoint files' names, the logged losses
and the final weights re-saved here are compared (the printer callback, which prints run times, is removed).
"""
import importlib.util
import os

# Progress bars print rates (it/s) that differ from run to run, doctor or not: off, as a CI log would have them.
os.environ["TQDM_DISABLE"] = "1"
if importlib.util.find_spec("transformers") is None:
    print("skip: transformers is not installed")
    raise SystemExit(0)
import inspect  # noqa: E402
import tempfile  # noqa: E402

import torch  # noqa: E402
from transformers import BertConfig, BertForSequenceClassification, PrinterCallback, Trainer, TrainingArguments  # noqa: E402


class Data(torch.utils.data.Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, 64, (64, 12), generator=g)
        self.labels = torch.randint(0, 2, (64,), generator=g)

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(12, dtype=torch.long), "labels": self.labels[i]}


torch.manual_seed(0)
config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, max_position_embeddings=32, num_labels=2)
model = BertForSequenceClassification(config)
out = tempfile.mkdtemp()
params = inspect.signature(TrainingArguments).parameters
cpu = {"use_cpu": True} if "use_cpu" in params else {"no_cuda": True}
args = TrainingArguments(output_dir=out, per_device_train_batch_size=8, max_steps=64, save_steps=32, logging_steps=16, report_to=[], disable_tqdm=True, seed=0, dataloader_num_workers=0, **cpu)
trainer = Trainer(model=model, args=args, train_dataset=Data())
trainer.remove_callback(PrinterCallback)
trainer.train()
print("losses:", [round(e["loss"], 4) for e in trainer.state.log_history if "loss" in e])
for d in sorted(os.listdir(out)):
    print(d, sorted(os.listdir(os.path.join(out, d))))
torch.save(model.state_dict(), "hf_state.pt")
