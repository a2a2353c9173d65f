#!/usr/bin/python3
# test_llmc.py — `mirror-data import` of llm.c's token shards, against numpy's writing of the format llm.c
# documents (256 int32 header words: magic 20240520, version 1, token count; then uint16 tokens): a directory of
# *_train*.bin and *_val*.bin shards gives a token dataset whose splits are the shards' tokens concatenated in
# name order (read back with h5py), tokenizer "gpt2", vocabulary 50257; a .bin file with --test works alike.
# Bad inputs (a wrong magic, another version, a count the file does not hold, a token >= 50257, no val shard)
# each exit non-zero naming the file, and leave nothing under the output's name; so does --shards, which token
# datasets (one file each) do not take.
#
# Usage: /usr/bin/python3 test_llmc.py MIRROR_DATA   (Debian's python3-numpy, python3-h5py)
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

from mirror_data_checks import MIRROR_DATA, check, failures  # noqa: E402


def shard(path, tokens, magic=20240520, version=1, count=None):
    header = np.zeros(256, np.int32)
    header[:3] = [magic, version, len(tokens) if count is None else count]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(tokens, np.uint16).tobytes())


def run(args):
    return subprocess.run([MIRROR_DATA] + args, capture_output=True, text=True, timeout=60)


def read(path):
    with h5py.File(path, "r") as f:
        a = dict(f.attrs)
        return (np.asarray(f["train/tokens"]), np.asarray(f["test/tokens"]), a["tokenizer"], int(a["vocab_size"]))


with tempfile.TemporaryDirectory() as tmp:
    p = lambda name: os.path.join(tmp, name)
    rng = np.random.default_rng(5)
    parts = {name: rng.integers(0, 50257, n) for name, n in
             [("fw_train_000002.bin", 700), ("fw_train_000001.bin", 1300), ("fw_val_000000.bin", 500)]}
    os.makedirs(p("shards"))
    for name, tokens in parts.items():
        shard(os.path.join(tmp, "shards", name), tokens)
    r = run(["import", p("shards"), "--out", p("fw.h5")])
    check(r.returncode == 0, f"import of a shard directory: {r.stderr}")
    if r.returncode == 0:
        train, test, tokenizer, vocab = read(p("fw.h5"))
        want = np.concatenate([parts["fw_train_000001.bin"], parts["fw_train_000002.bin"]])
        check(np.array_equal(train, want), "the train split is not the *_train* shards in name order")
        check(np.array_equal(test, parts["fw_val_000000.bin"]), "the test split is not the *_val* shard")
        tokenizer = np.ravel(tokenizer)[0]
        tokenizer = tokenizer.decode() if isinstance(tokenizer, bytes) else str(tokenizer)
        check(tokenizer == "gpt2" and vocab == 50257, f"tokenizer {tokenizer}, vocabulary {vocab}")
        check("2000 train tokens from 2 file(s), 500 test tokens" in r.stdout, f"summary: {r.stdout}")
        info = run(["inspect", p("fw.h5")])
        check(info.returncode == 0 and "50257" in info.stdout, f"inspect: {info.stdout} {info.stderr}")
    r = run(["import", os.path.join(tmp, "shards", "fw_train_000001.bin"), "--test",
             os.path.join(tmp, "shards", "fw_val_000000.bin"), "--out", p("one.h5")])
    check(r.returncode == 0, f"import of one file with --test: {r.stderr}")
    if r.returncode == 0:
        train, test, _, _ = read(p("one.h5"))
        check(np.array_equal(train, parts["fw_train_000001.bin"]) and np.array_equal(test, parts["fw_val_000000.bin"]),
              "one file with --test: wrong splits")

    def bad(name, message, **kw):
        shard(p(name), kw.pop("tokens", [1, 2, 3]), **kw)
        r = run(["import", p(name), "--test", os.path.join(tmp, "shards", "fw_val_000000.bin"), "--out", p("bad.h5")])
        check(r.returncode != 0, f"{name}: accepted")
        check(message in r.stderr and name in r.stderr, f"{name}: '{message}' not in the error: {r.stderr.strip()}")
        left = [f for f in os.listdir(tmp) if f.startswith("bad") or f.startswith(".bad")]
        check(not left, f"{name}: left {left} behind")

    bad("magic.bin", "has magic 12345; an llm.c token shard starts with 20240520", magic=12345)
    bad("version.bin", "is llm.c shard version 2", version=2)
    bad("count.bin", "says it holds 9 tokens", count=9)
    bad("token.bin", "token 1 is 60000, outside GPT-2's vocabulary of 50257", tokens=[5, 60000, 7])
    os.makedirs(p("noval"))
    shard(os.path.join(tmp, "noval", "x_train_0.bin"), [1, 2, 3])
    r = run(["import", p("noval"), "--out", p("bad.h5")])
    check(r.returncode != 0 and "needs *_val*.bin files, or give --test FILE" in r.stderr, f"no val shard: {r.stderr}")

    r = run(["import", p("shards"), "--out", p("bad.h5"), "--shards", "2"])
    check(r.returncode != 0 and "--shards does not apply to llm.c token shards" in r.stderr,
          f"--shards with llm.c shards: {r.returncode} {r.stderr}")
    check(not os.path.exists(p("bad.h5")), "--shards with llm.c shards: wrote bad.h5")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok: llm.c shards import into token datasets; bad shards are refused")
