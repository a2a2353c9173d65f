#!/usr/bin/python3
# test_tokenizers.py — `mirror-data text --tokenizer sentencepiece | gpt2` end to end, read back with h5py and
# checked against independent Python code:
#  - gpt2: a small vocab.json/merges.txt is generated here (BPE merges learned on a corpus by a few lines of
#    Python); every dataset's tokens must equal a reference GPT-2 encoder written here (bytes_to_unicode, the
#    pre-tokenizing pattern hand-coded with unicodedata's categories instead of PCRE2, merges by rank), and the
#    tokens of both splits, decoded by the reference decoder, must give back the input bytes.
#  - sentencepiece: the stored model (/tokenizer/model, a protobuf ModelProto) is parsed here with a tiny
#    protobuf reader; its pieces decode both splits back to the input bytes; the vocabulary has the requested
#    size and the tokens are not just bytes (merged pieces are used, fewer tokens than bytes).
#  - both: train_bytes/test_bytes are the split's text sizes (the byte rule, moved back to a UTF-8 boundary), and
#    `mirror-data inspect` shows them.
#  - bad input: --vocab-size missing or too small, --vocab/--merges missing, a missing or malformed vocab.json,
#    a vocabulary without every byte, a malformed merges line, a merge naming a token not in the vocabulary:
#    each a clear error, a non-zero exit and no file left behind.
#  - the reader: a train_bytes of 0 is refused naming it; a dataset without byte counts shows them as unknown.
#
# Usage: /usr/bin/python3 test_tokenizers.py MIRROR_DATA   (Debian's python3-numpy, python3-h5py)
import collections
import json
import os
import sys
import tempfile
import unicodedata

import h5py
import numpy as np

from mirror_data_checks import MIRROR_DATA, check, failures, run  # noqa: E402


def train_split(data, f):
    """The byte rule: floor(n (1 - f)), moved back to the first byte of the UTF-8 character it falls in."""
    k = int(len(data) * (1 - f))
    while k > 0 and (data[k] & 0xC0) == 0x80:
        k -= 1
    return k


# ---- an independent GPT-2 byte-level BPE -----------------------------------------------------------------

def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


BYTE_ENCODER = bytes_to_unicode()
BYTE_DECODER = {c: b for b, c in BYTE_ENCODER.items()}


def is_letter(c):
    return unicodedata.category(c).startswith("L")


def is_number(c):
    return unicodedata.category(c).startswith("N")


def is_space(c):
    return c in "\t\n\x0b\x0c\r" or unicodedata.category(c) in ("Zs", "Zl", "Zp") or c == "\x85"


def pretokenize(text):
    """GPT-2's pattern 's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+, by hand."""
    pieces, i, n = [], 0, len(text)
    while i < n:
        for c in ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d"):
            if text.startswith(c, i):
                pieces.append(c)
                i += len(c)
                break
        else:
            j = i + 1 if text[i] == " " and i + 1 < n else i
            for cls in (is_letter, is_number, lambda c: not (is_space(c) or is_letter(c) or is_number(c))):
                if j < n and cls(text[j]):
                    k = j
                    while k < n and cls(text[k]):
                        k += 1
                    pieces.append(text[i:k])
                    i = k
                    break
            else:  # whitespace: \s+(?!\S) leaves the last space to the next piece when a non-space follows
                k = i
                while k < n and is_space(text[k]):
                    k += 1
                if k < n and k - i > 1:
                    k -= 1
                pieces.append(text[i:k])
                i = k
    return pieces


def bpe(word, ranks):
    symbols = list(word)
    while len(symbols) > 1:
        pairs = [(ranks.get((a, b), 1 << 30), a, b) for a, b in zip(symbols, symbols[1:])]
        rank, a, b = min(pairs)
        if rank == 1 << 30:
            break
        merged, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                merged.append(a + b)
                i += 2
            else:
                merged.append(symbols[i])
                i += 1
        symbols = merged
    return symbols


def gpt2_encode(text, vocab, ranks):
    ids = []
    for piece in pretokenize(text):
        ids += [vocab[s] for s in bpe("".join(BYTE_ENCODER[b] for b in piece.encode("utf-8")), ranks)]
    return ids


def gpt2_decode(ids, vocab):
    inverse = {i: t for t, i in vocab.items()}
    return bytes(BYTE_DECODER[c] for i in ids for c in inverse[int(i)])


def learn_merges(corpus, count):
    """A few BPE merges learned on `corpus` (most frequent pair within pre-tokenized words, ties by order)."""
    words = collections.Counter(tuple(BYTE_ENCODER[b] for b in w.encode("utf-8")) for w in pretokenize(corpus))
    merges = []
    for _ in range(count):
        pairs = collections.Counter()
        for w, c in words.items():
            for p in zip(w, w[1:]):
                pairs[p] += c
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        merges.append(best)
        new = collections.Counter()
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new[tuple(out)] += c
        words = new
    return merges


# ---- an independent SentencePiece model reader (protobuf wire format) --------------------------------------

def varint(buf, i):
    v, shift = 0, 0
    while True:
        b = buf[i]
        v |= (b & 0x7F) << shift
        i += 1
        shift += 7
        if b < 0x80:
            return v, i


def fields(buf):
    """(field number, wire type, value) of one protobuf message; value: int or bytes."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wt}")
        yield num, wt, v


def sentencepiece_pieces(model):
    """ModelProto.pieces (field 1): (piece text, type) with type 1 normal, 2 unknown, 3 control, 6 byte."""
    pieces = []
    for num, wt, v in fields(model):
        if num == 1 and wt == 2:
            piece, kind = "", 1
            for n2, w2, v2 in fields(v):
                if n2 == 1:
                    piece = v2.decode("utf-8")
                elif n2 == 3:
                    kind = v2
            pieces.append((piece, kind))
    return pieces


def sentencepiece_decode(ids, pieces):
    out = bytearray()
    for i in ids:
        piece, kind = pieces[int(i)]
        if kind == 6:
            out.append(int(piece[3:5], 16))
        elif kind == 1 or kind == 4:
            out += piece.replace("\u2581", " ").encode("utf-8")
    return bytes(out)


# ---- the tests ---------------------------------------------------------------------------------------------

def attr_str(v):
    return v.decode() if isinstance(v, bytes) else str(np.asarray(v).ravel()[0])


def read_dataset(path):
    with h5py.File(path, "r") as h:
        a = {k: h.attrs[k] for k in h.attrs}
        blobs = {k: bytes(h["tokenizer"][k][...].tobytes()) for k in h["tokenizer"]} if "tokenizer" in h else {}
        dtypes = (h["train/tokens"].dtype, h["test/tokens"].dtype)
        return a, h["train/tokens"][...], h["test/tokens"][...], blobs, dtypes


def check_byte_counts(name, a, data, f):
    k = train_split(data, f)
    check(int(np.ravel(a["train_bytes"])[0]) == k and int(np.ravel(a["test_bytes"])[0]) == len(data) - k,
          f"{name}: train_bytes/test_bytes {a.get('train_bytes')}/{a.get('test_bytes')}, expected {k}/{len(data) - k}")
    return k


def corpus_text(seed, lines):
    rng = np.random.default_rng(seed)
    words = ("the king's men don't say what they've seen; we'll go, I'd think. naïve café 日本語 Ωmega "
             "number 42 and 1999 items!! (quoted) -- dash").split(" ")
    out = []
    for _ in range(lines):
        out.append(" ".join(words[int(i)] for i in rng.integers(0, len(words), int(rng.integers(3, 12)))))
    return "\n".join(out) + "\n  trailing   spaces  \n\n\tTabbed\n"


def test_gpt2(d):
    p = lambda name: os.path.join(d, name)
    corpus = corpus_text(5, 300)
    merges = learn_merges(corpus, 80)
    vocab = {c: i for i, c in enumerate(BYTE_ENCODER[b] for b in range(256))}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    vocab["<|endoftext|>"] = len(vocab)
    ranks = {m: r for r, m in enumerate(merges)}
    with open(p("vocab.json"), "w") as f:
        json.dump(vocab, f)  # \u escapes, as Hugging Face's file has them
    with open(p("merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))

    samples = [corpus,
               "Hello world's   \n\n  123 ü日本語!! it's ok'll   x",
               "  leading spaces, then 'quotes' and don't\n\n\n",
               "naïve café\u00a0nbsp and Ωmega 1999 -- done."]
    for i, text in enumerate(samples):
        data = text.encode("utf-8")
        with open(p(f"g{i}.txt"), "wb") as f:
            f.write(data)
        out = p(f"g{i}.h5")
        run(["text", "--out", out, "--tokenizer", "gpt2", "--vocab", p("vocab.json"), "--merges", p("merges.txt"),
             "--test-fraction", "0.3", p(f"g{i}.txt")])
        if not os.path.exists(out):
            continue
        a, tr, te, blobs, _ = read_dataset(out)
        check(attr_str(a["tokenizer"]) == "gpt2" and int(a["vocab_size"]) == len(vocab), f"gpt2 {i}: attributes {a}")
        k = check_byte_counts(f"gpt2 {i}", a, data, 0.3)
        want_tr, want_te = gpt2_encode(data[:k].decode(), vocab, ranks), gpt2_encode(data[k:].decode(), vocab, ranks)
        check(tr.tolist() == want_tr, f"gpt2 sample {i}: train tokens {tr.tolist()[:20]}... differ from the reference "
                                      f"{want_tr[:20]}...")
        check(te.tolist() == want_te, f"gpt2 sample {i}: test tokens {te.tolist()[:20]} differ from {want_te[:20]}")
        check(gpt2_decode(list(tr) + list(te), vocab) == data, f"gpt2 sample {i}: the tokens do not decode to the text")
        check(json.loads(blobs.get("vocab.json", b"{}")) == vocab and blobs.get("merges.txt", b"").decode("utf-8")
              .splitlines()[1:] == [f"{a} {b}" for a, b in merges], f"gpt2 {i}: stored files {list(blobs)}")
    check(len(gpt2_encode(corpus, vocab, ranks)) < 0.7 * len(corpus.encode()), "the generated merges do not merge")
    # Bytes that are not UTF-8 round-trip too (each run of them a piece of its own).
    data = b"the men \xff\xfe say \xc3( what\n" * 20
    with open(p("bin.txt"), "wb") as f:
        f.write(data)
    run(["text", "--out", p("bin.h5"), "--tokenizer", "gpt2", "--vocab", p("vocab.json"), "--merges", p("merges.txt"),
         p("bin.txt")])
    if os.path.exists(p("bin.h5")):
        _, tr, te, _, _ = read_dataset(p("bin.h5"))
        check(gpt2_decode(list(tr) + list(te), vocab) == data, "gpt2: bytes that are not UTF-8 do not round-trip")
    r = run(["inspect", p("g0.h5")])
    check("tokenizer    gpt2 (files under /tokenizer: merges.txt" in r.stdout and "vocab.json" in r.stdout
          and "bytes per token)" in r.stdout, f"inspect of a gpt2 dataset:\n{r.stdout}")
    return vocab, merges


def test_sentencepiece(d):
    p = lambda name: os.path.join(d, name)
    text = corpus_text(7, 600)
    data = text.encode("utf-8")
    with open(p("sp.txt"), "wb") as f:
        f.write(data)
    r = run(["text", "--out", p("sp.h5"), "--tokenizer", "sentencepiece", "--vocab-size", "400", "--test-fraction",
             "0.2", p("sp.txt")])
    if not os.path.exists(p("sp.h5")):
        return
    a, tr, te, blobs, dtypes = read_dataset(p("sp.h5"))
    check(attr_str(a["tokenizer"]) == "sentencepiece" and int(a["vocab_size"]) == 400, f"sentencepiece attributes {a}")
    check(dtypes == (np.uint16, np.uint16), f"sentencepiece dtypes {dtypes}")
    k = check_byte_counts("sentencepiece", a, data, 0.2)
    pieces = sentencepiece_pieces(blobs.get("model", b""))
    check(len(pieces) == 400, f"the stored model has {len(pieces)} pieces, expected 400")
    check(sum(1 for _, kind in pieces if kind == 6) == 256, "the stored model lacks the 256 byte pieces")
    check(sentencepiece_decode(tr, pieces) == data[:k], "sentencepiece: the train tokens do not decode to the train text")
    check(sentencepiece_decode(te, pieces) == data[k:], "sentencepiece: the test tokens do not decode to the test text")
    check(len(tr) < 0.6 * k, f"sentencepiece: {len(tr)} train tokens for {k} bytes: not merging")
    merged = [i for i in tr.tolist() if pieces[i][1] == 1 and len(pieces[i][0]) > 1]
    check(len(merged) > len(tr) // 2, "sentencepiece: the tokens are mostly not merged pieces")
    check(f"{len(tr)} train + {len(te)} test tokens from {k} + {len(data) - k} bytes" in r.stdout, f"summary {r.stdout}")
    r = run(["inspect", p("sp.h5")])
    check("tokenizer    sentencepiece (files under /tokenizer: model" in r.stdout and f"text {k} bytes" in r.stdout,
          f"inspect of a sentencepiece dataset:\n{r.stdout}")


def test_bad_input(d):
    p = lambda name: os.path.join(d, name)

    def write(name, content):
        with open(p(name), "w", encoding="utf-8") as f:
            f.write(content)
        return p(name)

    def bad(args, message):
        run(["text", "--out", p("bad.h5")] + args + [p("g0.txt")], ok=False, message=message)
        left = [x for x in os.listdir(d) if x.startswith("bad") or x.startswith(".bad")]
        check(not left, f"files left behind after a failed run {args}: {left}")

    sp = ["--tokenizer", "sentencepiece"]
    bad(sp, ["--tokenizer sentencepiece needs --vocab-size"])
    bad(sp + ["--vocab-size", "200"], ["--vocab-size 200 is too small", "257"])
    bad(sp + ["--vocab-size", "260"], ["SentencePiece could not train", "260"])
    bad(["--tokenizer", "bpe9"], ["unknown tokenizer 'bpe9'", "'sentencepiece'", "'gpt2'"])
    g = ["--tokenizer", "gpt2"]
    vocab, merges = p("vocab.json"), p("merges.txt")
    bad(g + ["--vocab", vocab], ["--tokenizer gpt2 needs --vocab FILE and --merges FILE", "--merges is missing"])
    bad(g + ["--merges", merges], ["--vocab is missing"])
    bad(g + ["--vocab", p("nope.json"), "--merges", merges], ["cannot read --vocab file", "nope.json"])
    bad(g + ["--vocab", write("broken.json", "{\"a\": 1,"), "--merges", merges], ["broken.json", "is not a JSON object"])
    bad(g + ["--vocab", write("neg.json", "{\"a\": -1}"), "--merges", merges], ["token 'a' has the id -1"])
    full = json.load(open(vocab))
    del full["Ġ"]
    bad(g + ["--vocab", write("nobyte.json", json.dumps(full)), "--merges", merges], ["lacks the token 'Ġ' of byte 32"])
    bad(g + ["--vocab", vocab, "--merges", write("m3.txt", "#version: 0.2\nt h e\n")],
        ["m3.txt", "line 2", "expected two tokens separated by one space"])
    bad(g + ["--vocab", vocab, "--merges", write("unk.txt", "#version: 0.2\nt h\nzz q\n")],
        ["unk.txt", "line 3", "'zz'", "not in vocab.json"])
    bad(g + ["--vocab", vocab, "--merges", write("unk2.txt", "Q Z\n")], ["unk2.txt", "line 1", "merged", "'QZ'"])


def test_bad_byte_counts(d):
    """train_bytes/test_bytes, when present, must be one integer >= 1: the reader names the attribute."""
    path = os.path.join(d, "badbytes.h5")
    with h5py.File(path, "w") as h:
        h.attrs.update({"format_version": 1, "kind": "tokens", "vocab_size": 10, "tokenizer": "gpt2"})
        h.attrs["train_bytes"] = np.int64(0)
        h.create_dataset("train/tokens", data=np.arange(9, dtype=np.uint16))
        h.create_dataset("test/tokens", data=np.arange(3, dtype=np.uint16))
    run(["inspect", path], ok=False, message=["attribute 'train_bytes' is 0", "at least 1"])
    with h5py.File(path, "r+") as h:
        del h.attrs["train_bytes"]
    r = run(["inspect", path])
    check("text bytes unknown" in r.stdout, f"inspect without byte counts:\n{r.stdout}")


def main():
    d = tempfile.mkdtemp(prefix="mirror-tokenizers-test-")
    test_gpt2(d)
    test_sentencepiece(d)
    test_bad_input(d)
    test_bad_byte_counts(d)
    check(not [x for x in os.listdir(d) if ".text-" in x], "temporary files left behind")
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("ok: sentencepiece and gpt2 token datasets")


if __name__ == "__main__":
    main()
