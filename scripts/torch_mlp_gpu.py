#!/usr/bin/env python3
"""torch_mlp_gpu.py — the PyTorch side of the GPU training benchmark in scripts/gpu-check.sh: the same MLP on
Fashion-MNIST, one process on one GPU, SGD with momentum; prints one JSON line with the train-loop samples/s.
    python3 scripts/torch_mlp_gpu.py [--epochs 2] [--batch 256] [--hidden 512,256]"""
import argparse, gzip, json, struct, time
import numpy as np, torch, torch.nn as nn

def idx(path):
    data = gzip.open(path).read()
    magic, n = struct.unpack(">II", data[:8])
    if magic == 2051:
        r, c = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, offset=16).reshape(n, r * c)
    return np.frombuffer(data, np.uint8, offset=8)

p = argparse.ArgumentParser()
p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--batch", type=int, default=256)
p.add_argument("--hidden", default="512,256")
p.add_argument("--lr", type=float, default=0.05)
a = p.parse_args()
dev = torch.device("cuda")
x = torch.from_numpy(idx(f"{a.data}/train-images-idx3-ubyte.gz").astype(np.float32) / 255.0).to(dev)
y = torch.from_numpy(idx(f"{a.data}/train-labels-idx1-ubyte.gz").astype(np.int64)).to(dev)
dims = [784] + [int(h) for h in a.hidden.split(",") if h] + [10]
layers = []
for i in range(len(dims) - 1):
    layers.append(nn.Linear(dims[i], dims[i + 1]))
    if i < len(dims) - 2:
        layers.append(nn.ReLU())
model = nn.Sequential(*layers).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
lossf = nn.CrossEntropyLoss()
steps = len(x) // a.batch
samples, t_train = 0, 0.0
for ep in range(a.epochs):
    perm = torch.randperm(len(x), device=dev)
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for s in range(steps):
        i = perm[s * a.batch:(s + 1) * a.batch]
        opt.zero_grad(set_to_none=True)
        lossf(model(x[i]), y[i]).backward()
        opt.step()
    torch.cuda.synchronize(); t_train += time.perf_counter() - t0
    samples += steps * a.batch
print(json.dumps({"peer": "torch-cuda", "hidden": a.hidden, "batch": a.batch, "samples_per_s": samples / t_train}))
