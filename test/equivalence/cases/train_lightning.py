"""A LightningModule trained by lightning.Trainer (CPU, 8 epochs of 8 steps) with ModelCheckpoint(save_last=True),
where lightning (or pytorch_lightning) is installed; the checks run before torch is imported, so both runs print
the same skip line where it is not. Checkpoints go to a temporary folder (their callback state names it); the
files' names, the checkpoint's keys and its state_dict re-saved here are compared.
"""
import importlib
import importlib.util

name = next((n for n in ("lightning", "pytorch_lightning") if importlib.util.find_spec(n) is not None), None)
if name is None:
    print("skip: lightning is not installed")
    raise SystemExit(0)
import inspect  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402

import torch  # noqa: E402

# `lightning` keeps the trainer in lightning.pytorch (lightning.LightningModule is the same class; its callbacks live
# only there); pytorch_lightning has them at the top.
L = importlib.import_module(name)
ModelCheckpoint = importlib.import_module(name + (".pytorch.callbacks" if name == "lightning" else ".callbacks")).ModelCheckpoint


class Lit(L.LightningModule):
    def __init__(self, hidden=16, lr=0.05):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
model = Lit()
ckdir = tempfile.mkdtemp()
trainer = L.Trainer(
    max_epochs=8,
    accelerator="cpu",
    devices=1,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    default_root_dir=ckdir,
    callbacks=[ModelCheckpoint(dirpath=ckdir, save_last=True)],
    deterministic=True,
)
trainer.fit(model, loader)
load_kwargs = {"weights_only": False} if "weights_only" in inspect.signature(torch.load).parameters else {}
ckpt = torch.load(os.path.join(ckdir, "last.ckpt"), map_location="cpu", **load_kwargs)
print("files:", sorted(os.listdir(ckdir)))
print("keys:", sorted(ckpt), "epoch", ckpt["epoch"], "step", ckpt["global_step"])
torch.save(ckpt["state_dict"], "lightning_state.pt")
with torch.no_grad():
    print("out %.5f" % model.net(torch.ones(1, 8)).item())
