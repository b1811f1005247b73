"""The built-in workload of `jarvis calibrate` (docs/ab.md): a CPU training
step of many small ops (tiny linear layers and elementwise ops on 8x16
tensors, SGD), so the profiler's per-op cost is a large part of the step and
shows clearly. Run under the shim, which stops it once it has measured; run
alone, it does `steps` steps (the first argument, default 200)."""
import sys

import torch

torch.set_num_threads(1)
torch.manual_seed(0)


def block(y):
    for _ in range(4):
        y = torch.tanh(y) * 0.5 + 0.1
    return y


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    model = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(8)])
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(8, 16)
    # Under the shim the program runs until the measurement is complete.
    limit = 10**9 if "JARVIS_AB_OUT" in __import__("os").environ else steps
    for _ in range(limit):
        optimizer.zero_grad(set_to_none=True)
        y = block(model(x))
        loss = y.square().mean()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
