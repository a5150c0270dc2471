"""logging configured by the script (basicConfig to stderr, a file handler in the working directory); after training
the root logger's handlers, the loggers that exist, and logging.captureWarnings' effect are printed.
"""
import logging
import warnings

import torch

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
file_handler = logging.FileHandler("train.log", mode="w")
file_handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
log = logging.getLogger("train")
log.addHandler(file_handler)
logging.captureWarnings(True)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    log.info("epoch %d loss %.6f", epoch, loss.item())
warnings.warn("a user warning routed to logging")
print("root handlers:", [type(h).__name__ for h in logging.getLogger().handlers])
print("loggers:", sorted(logging.Logger.manager.loggerDict))
print("levels:", logging.getLogger().level, log.level, logging.getLogger("torch").getEffectiveLevel())
