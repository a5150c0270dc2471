"""Binary and partial writes on a piped stdout: every byte value through sys.stdout.buffer, lines split across
several writes with flushes between them (a progress bar drawn in pieces), text with invalid UTF-8 escaped by
surrogateescape, a NUL and a line without its newline at the end. The reader must receive these bytes exactly.

# equivalence: stdio stdout=pipe stderr=file
"""
import sys

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
out = sys.stdout.buffer
for step in range(64):
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    out.write(b"step %d " % step)
    out.flush()
    out.write(b"[" + bytes([step * 4 % 256, 255 - step, 0, 10, 13]) + b"]")
    out.flush()
    if step % 4 == 3:
        out.write(b" loss %.6f\n" % loss.item())
out.write(bytes(range(256)) * 64)
out.flush()
sys.stdout.write("caf\xe9 \u2713 ")
sys.stdout.flush()
text = b"latin1 \xe9\xff bytes".decode("utf-8", "surrogateescape")
sys.stdout.reconfigure(errors="surrogateescape")
sys.stdout.write(text + "\n")
sys.stderr.write("stderr partial ")
sys.stderr.flush()
sys.stderr.buffer.write(b"\x00\x01\xfe")
sys.stdout.write("no newline at the end")
