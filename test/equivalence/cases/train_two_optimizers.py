"""A GAN-like loop: generator and discriminator, each with its own optimizer and a OneCycleLR schedule, stepping
alternately; the learning rates and losses are printed and both state_dicts saved.
"""
import torch

torch.manual_seed(0)
G = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8))
D = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LeakyReLU(0.2), torch.nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.999))
sched_g = torch.optim.lr_scheduler.OneCycleLR(opt_g, max_lr=1e-2, total_steps=60)
sched_d = torch.optim.lr_scheduler.OneCycleLR(opt_d, max_lr=1e-2, total_steps=60)
real = torch.randn(64, 8) + 2
bce = torch.nn.functional.binary_cross_entropy_with_logits
for step in range(60):
    x = real[step % 8 * 8 :][:8]
    fake = G(torch.randn(8, 4))
    d_loss = bce(D(x), torch.ones(8, 1)) + bce(D(fake.detach()), torch.zeros(8, 1))
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    sched_d.step()
    g_loss = bce(D(fake), torch.ones(8, 1))
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    sched_g.step()
    if step % 20 == 19:
        print("step %d d %.5f g %.5f lr %.6f" % (step + 1, d_loss.item(), g_loss.item(), sched_g.get_last_lr()[0]))
torch.save({"G": G.state_dict(), "D": D.state_dict(), "opt_g": opt_g.state_dict()}, "gan.pt")
