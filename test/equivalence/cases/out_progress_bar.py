"""tqdm-like progress output: carriage-return updates on stderr every step and on stdout every 8 steps, flushed,
with the streams' properties (tty, encoding, line buffering) and the terminal size Python falls back to. tqdm
itself is used where installed, with a fixed bar format (no rates or times).
"""
import shutil
import sys

import torch

print("stdout tty:", sys.stdout.isatty(), "encoding:", sys.stdout.encoding, "line_buffering:", sys.stdout.line_buffering)
print("stderr tty:", sys.stderr.isatty(), "errors:", sys.stderr.errors, "terminal size:", tuple(shutil.get_terminal_size()))
try:
    from tqdm import tqdm
except ImportError:
    tqdm = None
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
steps = range(64) if tqdm is None else tqdm(range(64), bar_format="{n_fmt}/{total_fmt}", mininterval=0, file=sys.stderr)
for step in steps:
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sys.stderr.write("\rstep %2d/64 loss %.4f" % (step + 1, loss.item()))
    sys.stderr.flush()
    if step % 8 == 7:
        sys.stdout.write("\repoch %d |%s%s|" % (step // 8, "#" * (step // 8 + 1), " " * (7 - step // 8)))
        sys.stdout.flush()
sys.stderr.write("\n")
print("\nloss %.6f" % loss.item())
