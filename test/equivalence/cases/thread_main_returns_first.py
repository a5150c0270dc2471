"""The main thread starts a non-daemon training thread and returns at once: the interpreter waits for the thread, which
trains 64 steps, then saves the weights and prints. The probe's end must wait for it (threading's exit hooks run when
the main thread has finished, before that wait): equivalence.test.ts asks for its 64 steps.
"""
import threading
import time

import torch


def train():
    time.sleep(0.3)  # the main thread has returned by now
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
    torch.save(model.state_dict(), "weights.pt")


threading.Thread(target=train, name="trainer").start()
print("main thread done")
