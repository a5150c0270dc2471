"""The user's own module that happens to be called gpuwise (GPU helpers of their project)."""
calls = []


def pick_device():
    return "cpu"


def step(loss):
    calls.append(round(float(loss), 6))
