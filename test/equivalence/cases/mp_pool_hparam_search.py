"""A fork Pool of 2 workers, each training its own small model for one learning rate (a hyper-parameter search).

Unrelated training processes of the script's own: each is a forked copy of a process that already imported torch.
"""
import multiprocessing as mp

import torch


def train(lr):
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    x, y = torch.randn(32, 4), torch.randn(32, 1)
    for _ in range(30):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return lr, round(loss.item(), 6)


if __name__ == "__main__":
    torch.manual_seed(0)
    probe_model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(probe_model.parameters(), lr=0.1)
    for _ in range(20):  # the parent trains too before forking
        loss = probe_model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("parent loss %.6f" % loss.item(), flush=True)
    with mp.get_context("fork").Pool(2) as pool:
        for lr, final in pool.map(train, [0.3, 0.1, 0.03, 0.01]):
            print("lr %g -> loss %.6f" % (lr, final))
