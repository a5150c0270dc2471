"""A word-language-model-like LSTM, sequence-first (batch_first=False, torch's default), on token batches cut with
get_batch() slicing; the model is saved whole at the end, as pytorch/examples' word_language_model does.
"""
import torch


class LM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 16)
        self.rnn = torch.nn.LSTM(16, 16)
        self.out = torch.nn.Linear(16, 50)

    def forward(self, x, hidden):
        y, hidden = self.rnn(self.emb(x), hidden)
        return self.out(y), hidden


torch.manual_seed(0)
model = LM()
opt = torch.optim.SGD(model.parameters(), lr=0.5)
stream = torch.randint(0, 50, (8 * 4 * 40 + 1,))
data = stream[:-1].view(4, -1).t().contiguous()  # [seq, batch]
target = stream[1:].view(4, -1).t().contiguous()
hidden = None
for i in range(0, data.size(0), 6):
    x, y = data[i : i + 6], target[i : i + 6]
    out, hidden = model(x, hidden)
    hidden = tuple(h.detach() for h in hidden)
    loss = torch.nn.functional.cross_entropy(out.view(-1, 50), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    opt.step()
print("loss %.5f" % loss.item())
with open("model.pt", "wb") as f:
    torch.save(model, f)
print("saved", type(torch.load("model.pt")).__name__)
