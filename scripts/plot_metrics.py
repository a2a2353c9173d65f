#!/usr/bin/python3
"""plot_metrics.py — draws a training run's metrics file as a PNG: loss (left) and accuracy (right) per
epoch, train and test. The metrics file is JSON Lines, one object per epoch with the keys
epoch, step, lr, train_loss, train_acc, test_loss, test_acc, samples_per_s, epoch_s.
A language model's file (lines with tokens_per_s, one per evaluation) is drawn per step instead: train and
test loss (left), tokens/s (right); its test keys may be absent (--eval-every 0).

    scripts/plot_metrics.py METRICS.jsonl [-o OUT.png] [--title TEXT]

Uses Debian's python3-matplotlib (Agg backend, no display needed). Exits 1 with "error: ..." naming the
file and line when the file is missing, empty or malformed.
"""
import argparse
import json
import math
import os
import sys

REQUIRED = ("epoch", "train_loss", "train_acc", "test_loss", "test_acc")
KNOWN = REQUIRED + ("step", "lr", "samples_per_s", "epoch_s")
LM_REQUIRED = ("step", "train_loss", "tokens_per_s")


class MetricsError(Exception):
    pass


def read_metrics(path):
    """Returns the records sorted by epoch; raises MetricsError saying what is wrong and where."""
    if not os.path.isfile(path):
        raise MetricsError(f"metrics file '{path}' does not exist (expected the JSONL file the trainer writes)")
    records = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            where = f"{path} line {number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise MetricsError(f"{where}: not valid JSON ({e.msg} at column {e.colno})") from None
            if not isinstance(record, dict):
                raise MetricsError(f"{where}: expected one JSON object per line, got {type(record).__name__}")
            required = LM_REQUIRED if "tokens_per_s" in record else REQUIRED
            missing = [k for k in required if k not in record]
            if missing:
                raise MetricsError(f"{where}: missing key(s) {', '.join(missing)} (expected {', '.join(KNOWN)})")
            for key in required:
                value = record[key]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                    raise MetricsError(f"{where}: '{key}' must be a finite number, got {value!r}")
            records.append(record)
    if not records:
        raise MetricsError(f"metrics file '{path}' is empty (no epoch has been recorded yet)")
    if any("tokens_per_s" in r for r in records) and not all("tokens_per_s" in r for r in records):
        raise MetricsError(f"metrics file '{path}' mixes a language model's lines with per-epoch ones")
    records.sort(key=lambda r: r["step"] if "tokens_per_s" in r else r["epoch"])
    return records


def plot_language_model(records, out, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r["step"] for r in records]
    fig, (ax_loss, ax_speed) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    ax_loss.plot(steps, [r["train_loss"] for r in records], marker="o", label="train")
    tested = [r for r in records if isinstance(r.get("test_loss"), (int, float))]
    if tested:
        ax_loss.plot([r["step"] for r in tested], [r["test_loss"] for r in tested], marker="s", label="test")
    ax_loss.set(xlabel="step", ylabel="loss (nats per token)", title="Loss")
    ax_speed.plot(steps, [r["tokens_per_s"] for r in records], marker="o")
    ax_speed.set(xlabel="step", ylabel="tokens/s", title="Throughput")
    for ax in (ax_loss, ax_speed):
        ax.grid(True, alpha=0.3)
    ax_loss.legend()
    if title:
        fig.suptitle(title)
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot(records, out, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = [r["epoch"] for r in records]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for ax, key, label in ((ax_loss, "loss", "Loss"), (ax_acc, "acc", "Accuracy")):
        ax.plot(epochs, [r["train_" + key] for r in records], marker="o", label="train")
        ax.plot(epochs, [r["test_" + key] for r in records], marker="s", label="test")
        ax.set_xlabel("epoch")
        ax.set_ylabel(label.lower())
        ax.set_title(label)
        ax.grid(True, alpha=0.3)
        ax.legend()
        if len(epochs) <= 20:
            ax.set_xticks(epochs)
    if title:
        fig.suptitle(title)
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv):
    parser = argparse.ArgumentParser(description="Plot loss and accuracy per epoch from a Mirror metrics file.")
    parser.add_argument("metrics", help="metrics JSONL file (one object per epoch)")
    parser.add_argument("-o", "--out", help="PNG to write (default: METRICS with .png instead of .jsonl)")
    parser.add_argument("--title", default="", help="figure title")
    args = parser.parse_args(argv)
    out = args.out or os.path.splitext(args.metrics)[0] + ".png"
    try:
        records = read_metrics(args.metrics)
        language_model = "tokens_per_s" in records[0]
        (plot_language_model if language_model else plot)(records, out, args.title)
    except MetricsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: cannot write '{out}': {e.strerror}", file=sys.stderr)
        return 1
    last = records[-1]
    if language_model:
        test = f"test loss {last['test_loss']:.4f}" if "test_loss" in last else "no test loss"
        print(f"wrote {out} ({len(records)} line(s); last: step {last['step']}, train loss {last['train_loss']:.4f}, {test})")
        return 0
    print(f"wrote {out} ({len(records)} epoch(s); last: test loss {last['test_loss']:.4f}, "
          f"test accuracy {last['test_acc']:.4f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
