"""A word-language-model loop in the style of pytorch/examples: a 2-layer LSTM on token ids sliced from
one long tensor (no DataLoader), parameters updated by hand (no torch.optim), hidden state detached
between batches. Follow the advice: --batch 80 (a larger batch)."""
import argparse

import torch
import torch.nn as nn

ap = argparse.ArgumentParser()
ap.add_argument("--batch", type=int, default=20)
ap.add_argument("--batches", type=int, default=300)
a = ap.parse_args()

ntokens, emsize, nhid, bptt, lr = 33278, 200, 200, 35, 20.0


class RNNModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(ntokens, emsize)
        self.rnn = nn.LSTM(emsize, nhid, 2, dropout=0.2)
        self.decoder = nn.Linear(nhid, ntokens)

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.encoder(x), hidden)
        return self.decoder(out).view(-1, ntokens), hidden


dev = torch.device("cuda")
torch.manual_seed(0)
data = torch.randint(0, ntokens, (a.batch * bptt * (a.batches + 1),)).view(-1, a.batch).to(dev)  # batchify
model = RNNModel().to(dev)
crit = nn.CrossEntropyLoss()
hidden = (torch.zeros(2, a.batch, nhid, device=dev), torch.zeros(2, a.batch, nhid, device=dev))
for b, i in enumerate(range(0, data.size(0) - 1 - bptt, bptt)):
    x, y = data[i : i + bptt], data[i + 1 : i + 1 + bptt].reshape(-1)
    hidden = tuple(h.detach() for h in hidden)
    model.zero_grad()
    out, hidden = model(x, hidden)
    loss = crit(out, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-lr)
    if b % 100 == 0:
        print(f"batch {b}: loss {loss.item():.3f}")
