"""tensorboard_read.py - Mirror's TensorBoard event files read back with TensorBoard's own reader.

Usage: python tensorboard_read.py TB_WRITE_SCALARS PROTO_FILE WORK_DIR   (the project's venv python)
Checks, against values this script makes itself:
  - the field numbers and types of Mirror's .proto equal those of TensorBoard's Event/Summary descriptors;
  - every record passes TensorBoard's record reader (length and data CRC-32C checks), the first record of
    each file is file_version "brain.Event:2", and the name is events.out.tfevents.<time>.<host>.<pid>;
  - EventAccumulator gives the tags, steps, wall times and float32 values written, bit for bit;
  - a resumed run (a second writer in the same directory, start_after_step S, overlapping steps) adds a
    file read after the first, and the reader sees each (tag, step) once: old values up to the last step
    already written, new ones after it.
Exit 0 when all hold; an AssertionError otherwise.
"""
import os
import random
import re
import socket
import struct
import subprocess
import sys

from tensorboard.backend.event_processing import event_accumulator
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow

WRITER, PROTO, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
rng = random.Random(15)


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def check_proto_field_numbers():
    text = open(PROTO).read()
    ours = {}
    for message, body in re.findall(r"message (\w+) \{(.*?)\n\}", text, re.S):
        for typ, name, num in re.findall(r"(\w+) (\w+) = (\d+);", body):
            ours[name] = (typ, int(num))
    kinds = {1: "double", 2: "float", 3: "int64", 9: "string", 11: "message"}
    theirs = {}
    for m in (event_pb2.Event, summary_pb2.Summary, summary_pb2.Summary.Value):
        for f in m.DESCRIPTOR.fields:
            theirs[f.name] = (kinds.get(f.type, str(f.type)), f.number)
    assert ours, "no fields found in " + PROTO
    for name, (typ, num) in ours.items():
        assert name in theirs, f"{name} is not a field of TensorBoard's Event/Summary"
        want_typ = typ if typ in kinds.values() else "message"
        assert theirs[name] == (want_typ, num), f"{name}: ours {(want_typ, num)}, TensorBoard's {theirs[name]}"
    print(f"proto: {len(ours)} fields match TensorBoard's descriptors")


def random_f32():
    kind = rng.randrange(4)
    if kind == 0:
        bits = rng.getrandbits(32) & 0x7F7FFFFF  # finite, any exponent below the top, either sign
        bits |= rng.getrandbits(1) << 31
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    if kind == 1:
        return struct.unpack("<f", struct.pack("<f", rng.uniform(0, 3)))[0]  # a loss-like value
    if kind == 2:
        return struct.unpack("<f", struct.pack("<I", rng.randrange(1, 1 << 23)))[0]  # subnormal
    return struct.unpack("<f", struct.pack("<f", 1.0 / 3.0))[0]


def make_scalars(steps, tags, t0):
    """[(tag, step, value, wall_time)] for every step of each tag."""
    out = []
    for step in steps:
        for tag in tags:
            if tag.startswith("epoch/") and step % 10 != 9:
                continue
            out.append((tag, step, random_f32(), t0 + step * 0.25 + rng.random() / 7))
    return out


def run_writer(directory, start_after, scalars):
    lines = "".join(f"{t} {s} {f32_bits(v):08x} {w!r}\n" for t, s, v, w in scalars)
    res = subprocess.run([WRITER, directory, str(start_after)], input=lines, capture_output=True, text=True)
    assert res.returncode == 0, f"tb_write_scalars failed: {res.stderr}"
    return re.search(r"^path (.*)$", res.stdout, re.M).group(1)


def check_file_raw(path, expected_records):
    name = os.path.basename(path)
    m = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)", name)
    assert m, f"event file name {name} is not events.out.tfevents.<time>.<host>.<pid>"
    assert m.group(2) == socket.gethostname(), f"host in {name} is not {socket.gethostname()}"
    reader = pywrap_tensorflow.PyRecordReader_New(path.encode(), 0, b"")
    records = []
    while True:
        try:
            reader.GetNext()  # raises DataLossError on a bad length or data CRC-32C
        except errors.OutOfRangeError:
            break
        records.append(event_pb2.Event.FromString(reader.record()))
    assert records[0].file_version == "brain.Event:2", f"first record of {name}: {records[0]}"
    assert len(records) == expected_records + 1, f"{name}: {len(records)} records, expected {expected_records + 1}"
    return int(m.group(1))


def read_back(directory):
    acc = event_accumulator.EventAccumulator(directory, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return {tag: acc.Scalars(tag) for tag in acc.Tags()["scalars"]}


def check_equal(seen, expected, what):
    want = {}
    for tag, step, value, wall in expected:
        want.setdefault(tag, []).append((step, f32_bits(value), wall))
    assert sorted(seen) == sorted(want), f"{what}: tags {sorted(seen)}, expected {sorted(want)}"
    for tag, events in seen.items():
        got = [(e.step, f32_bits(e.value), e.wall_time) for e in events]
        assert got == sorted(want[tag]), f"{what}: {tag} differs:\n got {got[:5]}...\nwant {sorted(want[tag])[:5]}..."
    n = sum(len(v) for v in want.values())
    print(f"{what}: {len(want)} tags, {n} scalars read back bit for bit")


def main():
    check_proto_field_numbers()
    tags = ["train/loss", "train/lr", "epoch/train_loss", "epoch/test_acc"]
    t0 = 1.7e9 + rng.random()

    # A first run: steps 0..29 (epoch scalars at 9, 19, 29).
    d = os.path.join(WORK, "run")
    first = make_scalars(range(0, 30), tags, t0)
    path1 = run_writer(d, -1, first)
    time1 = check_file_raw(path1, len(first))
    check_equal(read_back(d), first, "first run")

    # It crashed after step 29; the checkpoint was at step 19. The resumed run repeats 20..29 with other
    # values (as if not bit-identical) and goes on to 44: only steps after 29 may be added.
    second = make_scalars(range(20, 45), tags, t0 + 100)
    path2 = run_writer(d, 19, second)
    kept = [s for s in second if s[1] > 29]
    time2 = check_file_raw(path2, len(kept))
    assert time2 > time1 and os.path.basename(path2) > os.path.basename(path1), (path1, path2)
    check_equal(read_back(d), first + kept, "resumed run")

    # start_after_step alone: a fresh directory, steps at or below it dropped, the rest kept.
    d3 = os.path.join(WORK, "floor")
    third = make_scalars(range(0, 20), tags, t0)
    run_writer(d3, 9, third)
    check_equal(read_back(d3), [s for s in third if s[1] > 9], "start after step 9")

    # A tag first seen in the resumed run, and one whose last step was earlier than the others': each tag
    # keeps its own last step (epoch/test_acc last at 29 stays there; train/new starts at 0).
    fourth = [("train/new", 0, 0.5, t0), ("train/new", 1, 0.25, t0 + 1), ("epoch/test_acc", 29, 9.0, t0),
              ("epoch/test_acc", 39 + 10, 7.0, t0 + 2)]
    run_writer(d, -1, fourth)
    check_equal(read_back(d), first + kept + [fourth[0], fourth[1], fourth[3]], "per-tag resume")
    print("tensorboard_read: all checks passed")


main()
