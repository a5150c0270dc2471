"""A DataLoader worker writes to the inherited stdout: its dataset's __getitem__ prints an 80 KB debug dump of
every sample it loads (flushed), 1.3 MB in all, into a pipe a slow reader drains; the main process prints only
after training (the epoch, then 56 steps more on the batches it kept). Each print is larger than a pipe holds, so
the worker waits for the reader, as plainly; every byte must arrive (on a pipe made non-blocking the print raises
BlockingIOError in the worker, issue 43 item 1).

# equivalence: stdio stdout=slow stderr=pipe
"""
import torch
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(16, 8, generator=g)
        self.y = torch.randn(16, 1, generator=g)

    def __len__(self):
        return 16

    def __getitem__(self, i):
        row = " ".join("%.4f" % v for v in self.x[i].tolist())
        print("sample %2d %s" % (i, (row + "\n") * 1400), end="", flush=True)
        return self.x[i], self.y[i]


if __name__ == "__main__":
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(Noisy(), batch_size=2, num_workers=1)
    batches = []

    def train_step(x, y):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    for x, y in loader:
        batches.append((x, y))
        loss = train_step(x, y)
    for step in range(56):
        loss = train_step(*batches[step % 8])
    print("loss %.6f" % loss.item())
