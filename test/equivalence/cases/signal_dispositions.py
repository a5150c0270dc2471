"""Every signal's disposition as the script sees it (Python's view: default, ignored, Python's own handlers) and the
blocked-signal mask, before and after training.

doctor starts the command from Node: nothing it ignores or blocks may leak into the command, and nothing of the
probe's may take a signal over.
"""
import signal

import torch


def dispositions():
    out = []
    for sig in sorted(signal.valid_signals()):
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        h = signal.getsignal(sig)
        kind = "default" if h == signal.SIG_DFL else "ignored" if h == signal.SIG_IGN else "none" if h is None else getattr(h, "__name__", "handler")
        if kind != "default":
            out.append("%s=%s" % (signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig, kind))
    return out


print("before:", dispositions())
print("blocked:", sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(8)]
for step in range(64):
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss %.6f" % loss.item())
print("after:", dispositions())
