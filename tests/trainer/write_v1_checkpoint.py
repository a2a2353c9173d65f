"""write_v1_checkpoint.py — writes a checkpoint in format version 1 (the layout Mirror wrote before version 2,
docs/checkpoint-format.md) with h5py, independently of Mirror's writer, for an MLP over a dataset made by
mirror-data, and the test split's expected loss and accuracy computed here with numpy in float64.

  /usr/bin/python3 write_v1_checkpoint.py DATASET.h5 OUT.h5 HIDDEN  -> prints "loss L accuracy A"

Also writes OUT.h5.expected.csv, numpy's result per test sample: index,predicted,margin,p0..pC-1 (margin: the
gap between its two largest logits, so that near ties are not compared)."""
import sys
import zlib

import h5py
import numpy as np

data_path, out_path, hidden = sys.argv[1], sys.argv[2], int(sys.argv[3])

with h5py.File(data_path, "r") as d:
    classes = int(d.attrs["num_classes"])
    scale = float(d.attrs.get("x_scale", 1.0))
    mean = float(d.attrs.get("x_mean", 0.0))
    std = float(d.attrs.get("x_std", 1.0))
    x = d["test/x"][...].astype(np.float64)
    y = d["test/y"][...].astype(np.int64)
x = x.reshape(x.shape[0], -1)
# The reader's scaling, rounded to float32 as Mirror does (docs/dataset-format.md).
x = (x * (scale / std) - mean / std).astype(np.float32).astype(np.float64)
features = x.shape[1]

rng = np.random.default_rng(1234)
params = [  # PyTorch's layout: weight [out, in]
    ("fc1.weight", rng.normal(0, 0.4, (hidden, features)).astype(np.float32)),
    ("fc1.bias", rng.normal(0, 0.1, (hidden,)).astype(np.float32)),
    ("fc2.weight", rng.normal(0, 0.4, (classes, hidden)).astype(np.float32)),
    ("fc2.bias", rng.normal(0, 0.1, (classes,)).astype(np.float32)),
]
total = sum(p.size for _, p in params)
momentum = rng.normal(0, 0.01, (total,)).astype(np.float32)

header = {
    "step": 30, "epoch": 1, "epoch_micro_step": 0, "world_size": 2, "seed": 5,
    "model_spec": f"mlp:{hidden}", "input_features": features, "num_classes": classes,
    "epoch_loss_sum": 0.0, "epoch_correct": 0, "epoch_samples": 0,
    "optimizer_kind": "sgd", "optimizer_step": 30,
}
config_json = '{"model":"mlp:%d","optimizer":"sgd","lr":0.05,"momentum":0.9}' % hidden
metrics_jsonl = '{"epoch":1,"step":30,"train_loss":1.0}\n'


def crc(data: bytes) -> np.uint32:
    return np.uint32(zlib.crc32(data) & 0xFFFFFFFF)


# The canonical header text whose CRC-32 is header_crc32 (docs/checkpoint-format.md); epoch_loss_sum is
# written as C's "%a" of 0.0.
text = (f"step={header['step']};epoch={header['epoch']};epoch_micro_step={header['epoch_micro_step']}"
        f";world_size={header['world_size']};seed={header['seed']};model_spec={header['model_spec']}"
        f";input_features={features};num_classes={classes};epoch_loss_sum=0x0p+0"
        f";epoch_correct=0;epoch_samples=0;optimizer_kind=sgd;optimizer_step={header['optimizer_step']}"
        f";config_json={config_json};metrics_jsonl={metrics_jsonl}")


def tensors(group, named):
    order = ""
    for name, values in named:
        ds = group.create_dataset(name, data=values.astype("<f4"))
        ds.attrs["crc32"] = crc(values.astype("<f4").tobytes())
        order += name + "\n"
    group.attrs["order"] = np.bytes_(order)


with h5py.File(out_path, "w") as f:
    f.attrs["format"] = np.bytes_("mirror-checkpoint")
    f.attrs["format_version"] = np.int64(1)
    for key in ("step", "epoch", "epoch_micro_step", "world_size", "input_features", "num_classes",
                "epoch_correct", "epoch_samples", "optimizer_step"):
        f.attrs[key] = np.int64(header[key])
    f.attrs["seed"] = np.uint64(header["seed"])
    f.attrs["epoch_loss_sum"] = np.float64(0.0)
    f.attrs["model_spec"] = np.bytes_(header["model_spec"])
    f.attrs["optimizer_kind"] = np.bytes_("sgd")
    f.create_dataset("config_json", data=np.frombuffer(config_json.encode(), dtype=np.uint8))
    f.create_dataset("metrics_jsonl", data=np.frombuffer(metrics_jsonl.encode(), dtype=np.uint8))
    f.attrs["header_crc32"] = crc(text.encode())
    tensors(f.create_group("params"), params)
    tensors(f.create_group("optimizer"), [("momentum", momentum)])

# The same MLP in float64: Linear, ReLU, Linear, softmax cross-entropy.
w1, b1, w2, b2 = (p.astype(np.float64) for _, p in params)
logits = np.maximum(x @ w1.T + b1, 0.0) @ w2.T + b2
shifted = logits - logits.max(axis=1, keepdims=True)
log_sum = np.log(np.exp(shifted).sum(axis=1))
loss = float(np.mean(log_sum - shifted[np.arange(len(y)), y]))
predicted = logits.argmax(axis=1)
accuracy = float(np.mean(predicted == y))
probabilities = np.exp(shifted - log_sum[:, None])
top2 = np.sort(logits, axis=1)[:, -2:]
with open(out_path + ".expected.csv", "w") as e:
    for i in range(len(y)):
        e.write(f"{i},{predicted[i]},{top2[i, 1] - top2[i, 0]!r}," + ",".join(repr(p) for p in probabilities[i]) + "\n")
print(f"loss {loss:.6f} accuracy {accuracy:.6f}")
