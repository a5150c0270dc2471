"""torch.onnx.export of the trained model at the end of training (TorchScript-based exporter), file bytes compared.

Exporting runs the model under the tracer like torch.jit.trace. Where the exporter cannot run (a torch whose
default exporter needs onnx/onnxscript that are not installed) the case prints the same skip line in both runs.
"""
import io

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
for epoch in range(8):
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
model.eval()
kwargs = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
try:
    buf = io.BytesIO()
    torch.onnx.export(model, (torch.randn(1, 8),), buf, input_names=["x"], output_names=["logits"], opset_version=13, **kwargs)
except (ImportError, ModuleNotFoundError) as e:
    print("skip: the ONNX exporter needs a package that is missing (%s)" % e.name)
else:
    with open("model.onnx", "wb") as f:
        f.write(buf.getvalue())
    print("onnx bytes:", len(buf.getvalue()))
