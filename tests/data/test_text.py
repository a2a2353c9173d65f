#!/usr/bin/python3
# test_text.py — `mirror-data text` end to end, against h5py's and numpy's reading of the output: the tokens
# of each split equal the bytes of the input files (concatenated in order), split at floor(n * (1 - f))
# (computed here as nanoGPT does, int(n * (1 - f))), stored as chunked uint16 with the root attributes of
# docs/dataset-format.md ("Token datasets"). Bad inputs (a missing file, an empty text, a fraction outside
# (0, 1), a text too short for two splits, an unknown tokenizer) each exit non-zero with a clear message and
# leave nothing under the output's name. And the reader: token files written by h5py following the doc open
# (`mirror-data inspect`), uint16 and uint32, chunked or contiguous; a token >= vocab_size, a signed dtype, a
# missing attribute or an unknown kind is refused with the file, dataset and position named.
#
# Usage: /usr/bin/python3 test_text.py MIRROR_DATA   (Debian's python3-numpy, python3-h5py)
import os
import sys
import tempfile

import h5py
import numpy as np

from mirror_data_checks import MIRROR_DATA, check, failures, run  # noqa: E402


def main():
    d = tempfile.mkdtemp(prefix="mirror-text-test-")
    p = lambda name: os.path.join(d, name)
    rng = np.random.default_rng(3)
    # Three inputs: ASCII, all 256 byte values (binary and UTF-8 are just bytes), and more text.
    contents = [b"First Citizen:\nBefore we proceed any further, hear me speak.\n",
                bytes(rng.permutation(256).astype(np.uint8)),
                "All: Speak, speak. \u00e9\u00e8\n".encode("utf-8") * 7]
    for i, c in enumerate(contents):
        with open(p(f"in{i}.txt"), "wb") as f:
            f.write(c)
    inputs = [p(f"in{i}.txt") for i in range(3)]
    text = np.frombuffer(b"".join(contents), dtype=np.uint8)
    n = len(text)

    for f, chunk in ((0.1, None), (0.25, 16), (0.5, 1000000)):
        out = p(f"t{f}.h5")
        args = ["text", "--out", out, "--test-fraction", str(f)] + inputs
        if chunk:
            args += ["--chunk", str(chunk)]
        r = run(args)
        split = int(n * (1 - f))
        check(f"{split} train + {n - split} test tokens" in r.stdout, f"summary '{r.stdout.strip()}' for f={f}")
        with h5py.File(out, "r") as h:
            a = dict(h.attrs)
            check(int(a["format_version"]) == 1 and int(a["vocab_size"]) == 256, f"attributes {a}")
            kind = a["kind"].decode() if isinstance(a["kind"], bytes) else str(np.asarray(a["kind"]).ravel()[0])
            tok = a["tokenizer"].decode() if isinstance(a["tokenizer"], bytes) else str(np.asarray(a["tokenizer"]).ravel()[0])
            check(kind == "tokens" and tok == "bytes", f"kind {kind!r} tokenizer {tok!r}")
            tr, te = h["train/tokens"], h["test/tokens"]
            check(tr.dtype == np.uint16 and te.dtype == np.uint16, f"dtypes {tr.dtype} {te.dtype}")
            check(tr.ndim == 1 and tr.chunks is not None, f"train tokens shape {tr.shape} chunks {tr.chunks}")
            want_chunk = min(chunk or 65536, split)
            check(tr.chunks == (want_chunk,), f"chunks {tr.chunks}, expected ({want_chunk},)")
            check(np.array_equal(tr[...], text[:split].astype(np.uint16)), f"train tokens differ from the bytes (f={f})")
            check(np.array_equal(te[...], text[split:].astype(np.uint16)), f"test tokens differ from the bytes (f={f})")
        r = run(["inspect", out])
        for part in ("kind         tokens", "tokenizer    bytes", "vocabulary   256", f"/train       {split} tokens; uint16",
                     f"{n - split} tokens; uint16"):
            check(part in r.stdout, f"inspect: '{part}' not in:\n{r.stdout}")
    check(not [x for x in os.listdir(d) if ".text-" in x], "temporary files left after successful runs")

    # --- bad inputs: a clear error, nothing left behind ----------------------------------------------------
    with open(p("empty.txt"), "wb"):
        pass
    with open(p("one.txt"), "wb") as f:
        f.write(b"x")

    def bad(args, message):
        run(["text", "--out", p("bad.h5")] + args, ok=False, message=message)
        left = [x for x in os.listdir(d) if x.startswith("bad") or x.startswith(".bad")]
        check(not left, f"files left behind after a failed run {args}: {left}")

    bad([p("nope.txt")], ["nope.txt", "does not exist"])
    bad([inputs[0], p("nope.txt")], ["nope.txt", "does not exist"])
    bad([p("empty.txt")], ["empty"])
    bad([p("empty.txt"), p("empty.txt")], ["empty"])
    bad([inputs[0], "--test-fraction", "0"], ["--test-fraction", "between 0 and 1"])
    bad([inputs[0], "--test-fraction", "1"], ["--test-fraction", "between 0 and 1"])
    bad([inputs[0], "--test-fraction", "-0.5"], ["--test-fraction"])
    bad([p("one.txt")], ["too short", "1 bytes"])
    bad([p("one.txt"), "--test-fraction", "0.99"], ["too short"])
    bad([inputs[0], "--tokenizer", "gpt3"], ["unknown tokenizer 'gpt3'", "'bytes'"])
    bad([d], ["not a regular file"])
    # An existing output is left as it was after a failure.
    with open(p("keep.h5"), "wb") as f:
        f.write(b"old")
    run(["text", "--out", p("keep.h5"), p("empty.txt")], ok=False, message="empty")
    with open(p("keep.h5"), "rb") as f:
        check(f.read() == b"old", "a failed run changed an existing output file")

    # --- the reader: files written by h5py following the doc -----------------------------------------------
    def h5py_tokens(path, train, test, vocab, dtype, chunks=True, kind="tokens", tokenizer="bytes"):
        with h5py.File(path, "w") as h:
            h.attrs["format_version"] = 1
            if kind is not None:
                h.attrs["kind"] = kind
            if vocab is not None:
                h.attrs["vocab_size"] = vocab
            if tokenizer is not None:
                h.attrs["tokenizer"] = tokenizer
            for split, tokens in (("train", train), ("test", test)):
                a = np.asarray(tokens, dtype=dtype)
                h.create_dataset(f"{split}/tokens", data=a, chunks=(min(4, len(a)),) if chunks else None)

    h5py_tokens(p("py16.h5"), np.arange(50) % 7, [1, 2, 3], 7, np.uint16)
    r = run(["inspect", p("py16.h5")])
    check("/train       50 tokens; uint16; chunk 4 tokens" in r.stdout, f"h5py uint16 file: {r.stdout}")
    h5py_tokens(p("py32.h5"), np.arange(20) * 5000, [99999], 100000, np.uint32, chunks=False, tokenizer="gpt2-like")
    r = run(["inspect", p("py32.h5")])
    check("20 tokens; uint32; chunk none (contiguous)" in r.stdout and "gpt2-like" in r.stdout, f"h5py uint32: {r.stdout}")

    def bad_file(name, message, **kw):
        h5py_tokens(p(name), **kw)
        run(["inspect", p(name)], ok=False, message=[p(name)] + message)

    bad_file("big.h5", ["'/test/tokens'", "token 9 at position 2 of split '/test'", "< 9 (vocab_size)"],
             train=[0, 1, 2], test=[0, 8, 9, 9], vocab=9, dtype=np.uint16)
    bad_file("signed.h5", ["'/train/tokens'", "wrong dtype", "uint16"], train=[0, 1], test=[0], vocab=9, dtype=np.int64)
    bad_file("narrow.h5", ["uint16 but vocab_size is 70000", "uint32"], train=[0, 1], test=[0], vocab=70000,
             dtype=np.uint16)
    bad_file("novocab.h5", ["'vocab_size'", "missing"], train=[0, 1], test=[0], vocab=None, dtype=np.uint16)
    bad_file("notok.h5", ["'tokenizer'", "missing"], train=[0, 1], test=[0], vocab=9, dtype=np.uint16, tokenizer=None)
    bad_file("kind.h5", ["attribute 'kind' is 'images'", "expected 'tokens'"], train=[0, 1], test=[0], vocab=9,
             dtype=np.uint16, kind="images")
    bad_file("emptysplit.h5", ["'/test' is empty"], train=[0, 1], test=np.zeros(0), vocab=9, dtype=np.uint16,
             chunks=False)

    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("all text checks passed")


if __name__ == "__main__":
    main()
