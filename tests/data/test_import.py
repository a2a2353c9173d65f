#!/usr/bin/python3
# test_import.py — `mirror-data import` end to end, against NumPy's and h5py's own values of the source:
# inputs are written here by numpy (np.save, np.savez, np.savez_compressed), h5py and Pillow, imported, and
# the output is read back with h5py (another program's reader) and compared exactly with the source arrays.
# Bad inputs (ragged arrays, NaN, Inf, float32 overflow, labels out of range, mismatched lengths, truncated
# .npy, corrupt .npz, an image that does not decode, mixed image sizes, ...) must each exit non-zero with a
# clear message and leave nothing under the output's name. Also the reader: a Mirror-layout file written by
# h5py with numpy's default int64 labels opens; one whose int64 label is out of range does not. And where
# Debian's dataset-fashion-mnist is installed: its Keras-style .npz import equals `mirror-data fashion-mnist`.
#
# Usage: /usr/bin/python3 test_import.py MIRROR_DATA   (Debian's python3-numpy, python3-h5py, python3-pil)
import glob
import gzip
import os
import subprocess
import sys
import tempfile
import zipfile

import h5py
import numpy as np
from PIL import Image

from mirror_data_checks import MIRROR_DATA, check, failures, run  # noqa: E402


def read_out(path):
    """The output as h5py sees it: {split: (x, y)} over all shards in order, and the first file's attributes."""
    stem = path[:-3]
    files = sorted(glob.glob(stem + "-*-of-*.h5")) or [path]
    out = {}
    for split in ("train", "test"):
        xs, ys = [], []
        for f in files:
            with h5py.File(f, "r") as h:
                xs.append(h[split]["x"][...])
                ys.append(h[split]["y"][...])
        out[split] = (np.concatenate(xs), np.concatenate(ys))
    with h5py.File(files[0], "r") as h:
        attrs = {k: h.attrs[k] for k in h.attrs}
    return out, attrs


def nothing_left(d, name):
    """No output and no temporary file remain in directory d after a failed import to d/name."""
    left = [f for f in os.listdir(d) if f.startswith(name[:-3]) or ".importing-" in f]
    check(not left, f"files left behind after a failed import: {left}")


def exact(a, b, what):
    check(a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b),
          f"{what}: got {a.dtype} {a.shape}, expected {b.dtype} {b.shape} (equal: "
          f"{a.shape == b.shape and np.array_equal(a, b)})")


def png(path, pixels, mode):
    Image.fromarray(pixels, mode).save(path)


def main():
    rng = np.random.default_rng(7)
    d = tempfile.mkdtemp(prefix="mirror-import-test-")
    p = lambda name: os.path.join(d, name)

    # --- .npy pair: float64 samples, int64 labels (numpy's defaults), split by --test-fraction --------------
    x = rng.standard_normal((200, 3, 5, 4)) * 100
    y = rng.integers(0, 7, 200)
    np.save(p("x.npy"), x)
    np.save(p("y.npy"), y)
    run(["import", "--x", p("x.npy"), "--y", p("y.npy"), "--out", p("npy.h5"), "--test-fraction", "0.25", "--seed", "5"])
    out, attrs = read_out(p("npy.h5"))
    (xtr, ytr), (xte, yte) = out["train"], out["test"]
    check(len(yte) == 50 and len(ytr) == 150, f"--test-fraction 0.25 of 200 gave {len(ytr)} + {len(yte)}")
    x32 = x.astype(np.float32)  # the float64 -> float32 rounding numpy itself does
    rows = {x32[i].tobytes(): i for i in range(len(x32))}
    idx_tr = [rows.get(r.tobytes(), -1) for r in xtr]
    idx_te = [rows.get(r.tobytes(), -1) for r in xte]
    check(sorted(idx_tr + idx_te) == list(range(200)), "train + test are not exactly the source samples, each once")
    check(idx_tr == sorted(idx_tr) and idx_te == sorted(idx_te), "samples did not keep their source order")
    exact(xtr, x32[idx_tr], "npy train x")
    exact(ytr, y[idx_tr].astype(np.int32), "npy train y")
    exact(yte, y[idx_te].astype(np.int32), "npy test y")
    check(list(attrs["sample_shape"]) == [3, 5, 4] and attrs["num_classes"] == 7, f"npy attributes {attrs}")
    run(["import", "--x", p("x.npy"), "--y", p("y.npy"), "--out", p("npy2.h5"), "--test-fraction", "0.25", "--seed", "5"])
    check(np.array_equal(read_out(p("npy2.h5"))[0]["test"][0], xte), "the same --seed gave a different split")
    run(["import", "--x", p("x.npy"), "--y", p("y.npy"), "--out", p("npy3.h5"), "--test-fraction", "0.25", "--seed", "6"])
    check(not np.array_equal(read_out(p("npy3.h5"))[0]["test"][0], xte), "another --seed gave the same split")

    # A big-endian .npy with int16 labels and a separate test pair.
    xb = rng.standard_normal((30, 6)).astype(">f4")
    yb = rng.integers(0, 3, 30).astype(">i2")
    np.save(p("xb.npy"), xb)
    np.save(p("yb.npy"), yb)
    run(["import", p("xb.npy"), "--y", p("yb.npy"), "--test", p("xb.npy"), "--test-y", p("yb.npy"), "--out", p("be.h5")])
    out, _ = read_out(p("be.h5"))
    exact(out["train"][0], xb.astype("<f4"), "big-endian x")
    exact(out["test"][1], yb.astype(np.int32), "big-endian int16 y")

    # --- .npz, stored (np.savez): uint8 samples, uint8 labels, class names, 3 shards -------------------------
    xu = rng.integers(0, 256, (90, 8, 8), dtype=np.uint8)
    yu = rng.integers(0, 4, 90).astype(np.uint8)
    np.savez(p("u.npz"), x=xu, y=yu)
    with zipfile.ZipFile(p("u.npz")) as z:
        check(all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist()), "np.savez did not store its members")
    run(["import", p("u.npz"), "--out", p("u.h5"), "--test-fraction", "0.1", "--shards", "3",
         "--class-names", "cat,dog,bird,fish"])
    out, attrs = read_out(p("u.h5"))
    check(len(glob.glob(p("u-*-of-00003.h5"))) == 3, "--shards 3 did not write 3 files")
    allx = np.concatenate([out["train"][0], out["test"][0]])
    check(allx.dtype == np.uint8 and sorted(map(bytes, allx)) == sorted(map(bytes, xu)), "npz uint8 samples differ")
    check(abs(attrs["x_scale"] - 1 / 255) < 1e-15, f"uint8 x_scale {attrs['x_scale']}")
    names = [n.decode() if isinstance(n, bytes) else n for n in attrs["class_names"]]
    check(names == ["cat", "dog", "bird", "fish"], f"class_names attribute {names}")
    shown = run(["inspect", p("u-00000-of-00003.h5")]).stdout
    check("cat, dog, bird, fish" in shown, f"inspect does not show the class names: {shown}")

    # --- .npz, deflated (np.savez_compressed), Keras' keys with their own test set, channels last ------------
    xk = rng.integers(0, 256, (60, 6, 7, 3), dtype=np.uint8)
    yk = rng.integers(0, 10, 60)
    xkt = rng.integers(0, 256, (12, 6, 7, 3), dtype=np.uint8)
    ykt = rng.integers(0, 10, 12)
    np.savez_compressed(p("k.npz"), x_train=xk, y_train=yk.reshape(-1, 1), x_test=xkt, y_test=ykt)
    with zipfile.ZipFile(p("k.npz")) as z:
        check(all(i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist()), "savez_compressed did not deflate")
    run(["import", p("k.npz"), "--layout", "nhwc", "--out", p("k.h5")])
    out, attrs = read_out(p("k.h5"))
    exact(out["train"][0], np.ascontiguousarray(xk.transpose(0, 3, 1, 2)), "keras nhwc train x")
    exact(out["test"][0], np.ascontiguousarray(xkt.transpose(0, 3, 1, 2)), "keras nhwc test x")
    exact(out["train"][1], yk.astype(np.int32), "keras (N, 1) train y")
    exact(out["test"][1], ykt.astype(np.int32), "keras test y")
    check(list(attrs["sample_shape"]) == [3, 6, 7], f"nhwc sample_shape {attrs['sample_shape']}")

    # --- HDF5 written by h5py: named datasets, float32 samples, int64 labels, test set in the same file ------
    xh = rng.standard_normal((70, 11)).astype(np.float32)
    yh = rng.integers(0, 5, 70)
    with h5py.File(p("src.h5"), "w") as f:
        f.create_dataset("/images/train", data=xh, chunks=(16, 11), compression="gzip")
        f["/labels/train"] = yh
        f["/images/test"] = xh[:9] * 2
        f["/labels/test"] = yh[:9].astype(np.uint16)
    run(["import", p("src.h5"), "--x", "/images/train", "--y", "/labels/train", "--test-x", "/images/test",
         "--test-y", "/labels/test", "--out", p("h.h5")])
    out, attrs = read_out(p("h.h5"))
    exact(out["train"][0], xh, "hdf5 train x")
    exact(out["train"][1], yh.astype(np.int32), "hdf5 train y")
    exact(out["test"][0], xh[:9] * 2, "hdf5 test x")
    check(attrs["x_scale"] == 1.0, "float32 x_scale should be 1")

    # --- image folders: grayscale PNG, RGB PNG (with an opaque alpha and a gray image among them), JPEG ------
    gray = {c: [rng.integers(0, 256, (9, 13), dtype=np.uint8) for _ in range(n)] for c, n in (("b_shirt", 3), ("a_shoe", 4))}
    for c, imgs in gray.items():
        os.makedirs(p(f"gray/{c}"))
        for i, im in enumerate(imgs):
            png(p(f"gray/{c}/{i:02d}.png"), im, "L")
    run(["import", p("gray"), "--out", p("g.h5"), "--test-fraction", "0.3", "--seed", "1"])
    out, attrs = read_out(p("g.h5"))
    source = [(im, 0) for im in gray["a_shoe"]] + [(im, 1) for im in gray["b_shirt"]]  # classes in sorted order
    got = sorted((bytes(a), int(b)) for a, b in zip(np.concatenate([out["train"][0], out["test"][0]]),
                                                   np.concatenate([out["train"][1], out["test"][1]])))
    check(got == sorted((bytes(im), lab) for im, lab in source), "grayscale PNG pixels or labels differ")
    check(list(attrs["sample_shape"]) == [9, 13], f"gray sample_shape {attrs['sample_shape']}")
    names = [n.decode() if isinstance(n, bytes) else n for n in attrs["class_names"]]
    check(names == ["a_shoe", "b_shirt"], f"image class names {names}")

    rgb = rng.integers(0, 256, (5, 10, 3), dtype=np.uint8)
    rgba = np.concatenate([rng.integers(0, 256, (5, 10, 3), dtype=np.uint8), np.full((5, 10, 1), 255, np.uint8)], 2)
    g1 = rng.integers(0, 256, (5, 10), dtype=np.uint8)
    for split in ("train", "test"):
        os.makedirs(p(f"rgb/{split}/x"))
        os.makedirs(p(f"rgb/{split}/y"))
        png(p(f"rgb/{split}/x/1.png"), rgb, "RGB")
        png(p(f"rgb/{split}/x/2.png"), rgba, "RGBA")
        png(p(f"rgb/{split}/y/1.png"), g1, "L")
    run(["import", p("rgb/train"), "--test", p("rgb/test"), "--out", p("rgb.h5")])
    out, attrs = read_out(p("rgb.h5"))
    want = np.stack([rgb.transpose(2, 0, 1), rgba[:, :, :3].transpose(2, 0, 1), np.stack([g1] * 3)])
    exact(out["train"][0], want, "RGB/RGBA/gray PNG pixels (C, H, W)")
    exact(out["test"][1], np.array([0, 0, 1], np.int32), "image folder labels")

    os.makedirs(p("jpg/c0"))
    os.makedirs(p("jpg/c1"))
    jp = [rng.integers(0, 256, (16, 16, 3), dtype=np.uint8) for _ in range(2)]
    for i, im in enumerate(jp):
        Image.fromarray(im, "RGB").save(p(f"jpg/c{i}/im.jpg"), quality=95)
    run(["import", p("jpg"), "--out", p("j.h5"), "--test", p("jpg")])
    out, _ = read_out(p("j.h5"))
    for i in range(2):  # JPEG is lossy: stb_image and libjpeg (Pillow) may round a few values differently
        ref = np.asarray(Image.open(p(f"jpg/c{i}/im.jpg")).convert("RGB")).transpose(2, 0, 1).astype(int)
        diff = np.abs(out["train"][0][i].astype(int) - ref).max()
        check(diff <= 3, f"JPEG {i} differs from Pillow's decode by up to {diff}")

    # --- the reader: a Mirror-layout file written by h5py with int64 labels ---------------------------------
    def mirror_file(path, ytrain):
        with h5py.File(path, "w") as f:
            f.attrs["format_version"] = 1
            f.attrs["num_classes"] = 3
            f.attrs["sample_shape"] = np.array([4])
            for s, yy in (("train", ytrain), ("test", np.array([0, 1, 2]))):
                f[f"{s}/x"] = np.ones((len(yy), 4), np.float32)
                f[f"{s}/y"] = yy  # int64, numpy's default
    mirror_file(p("r64.h5"), np.array([0, 1, 2, 1]))
    check("4 samples" in run(["inspect", p("r64.h5")]).stdout, "int64 labels written by h5py were not accepted")
    with h5py.File(p("r64.h5"), "a") as f:
        f.attrs["class_names"] = np.array([b"low", b"mid", b"high"])  # fixed-length strings, as h5py stores bytes
    check("3 (low, mid, high)" in run(["inspect", p("r64.h5")]).stdout, "fixed-length class_names not read")
    with h5py.File(p("r64.h5"), "a") as f:
        f.attrs["class_names"] = ["low", "high"]  # variable-length strings, one too few
    run(["inspect", p("r64.h5")], ok=False, message=["class_names has 2 names for num_classes 3"])
    mirror_file(p("r64bad.h5"), np.array([0, 1, 2 ** 40, 1]))
    run(["inspect", p("r64bad.h5")], ok=False, message=["label 1099511627776 at index 2", "out of range"])

    # --- bad inputs: each a clear error, a non-zero exit, and nothing left under the output's name ----------
    def bad(args, message, name="bad.h5"):
        run(["import"] + args + ["--out", p(name)], ok=False, message=message)
        nothing_left(d, name)

    np.save(p("ragged.npy"), np.array([[1, 2, 3], [4, 5]], dtype=object), allow_pickle=True)
    bad(["--x", p("ragged.npy"), "--y", p("y.npy")], ["ragged.npy", "object", "ragged"])
    xn = x.copy()
    xn[17, 2, 1, 3] = np.nan
    np.save(p("nan.npy"), xn)
    bad(["--x", p("nan.npy"), "--y", p("y.npy"), "--test-fraction", "0.2"],
        ["nan.npy", "sample 17 feature 47", "[2, 1, 3]", "NaN"])
    xi = x.astype(np.float32)
    xi[3, 0, 0, 1] = -np.inf
    np.save(p("inf.npy"), xi)
    bad(["--x", p("inf.npy"), "--y", p("y.npy"), "--test-fraction", "0.2"], ["sample 3 feature 1", "-Inf"])
    xo = x.copy()
    xo[5, 0, 0, 0] = 1e39
    np.save(p("over.npy"), xo)
    bad(["--x", p("over.npy"), "--y", p("y.npy"), "--test-fraction", "0.2"], ["sample 5 feature 0", "float32's range"])
    bad(["--x", p("x.npy"), "--y", p("y.npy"), "--test-fraction", "0.2", "--class-names", "a,b,c"],
        ["label", "out of range", "expected 0 <= label < 3"])
    np.save(p("yneg.npy"), np.where(np.arange(200) == 42, -1, y))
    bad(["--x", p("x.npy"), "--y", p("yneg.npy"), "--test-fraction", "0.2"], ["label -1 of sample 42", "out of range"])
    np.save(p("yf.npy"), y.astype(np.float64))
    bad(["--x", p("x.npy"), "--y", p("yf.npy"), "--test-fraction", "0.2"], ["float64 labels", "integer class ids"])
    np.save(p("y199.npy"), y[:199])
    bad(["--x", p("x.npy"), "--y", p("y199.npy"), "--test-fraction", "0.2"],
        ["mismatched lengths", "200 samples", "199 labels"])
    raw = open(p("x.npy"), "rb").read()
    open(p("cut.npy"), "wb").write(raw[:-100])
    bad(["--x", p("cut.npy"), "--y", p("y.npy"), "--test-fraction", "0.2"], ["cut.npy", "truncated"])
    open(p("cuthead.npy"), "wb").write(raw[:40])
    bad(["--x", p("cuthead.npy"), "--y", p("y.npy"), "--test-fraction", "0.2"], ["cuthead.npy", "header"])
    zraw = open(p("k.npz"), "rb").read()
    open(p("cut.npz"), "wb").write(zraw[: len(zraw) // 2])
    bad([p("cut.npz")], ["cut.npz", "not a readable zip archive"])
    flipped = bytearray(zraw)
    with zipfile.ZipFile(p("k.npz")) as z:
        info = z.getinfo("x_train.npy")
    flipped[info.header_offset + 30 + len(info.filename) + 200] ^= 0xFF  # inside x_train's deflated data
    open(p("flip.npz"), "wb").write(bytes(flipped))
    bad([p("flip.npz"), "--layout", "nhwc"], ["flip.npz", "x_train.npy"])
    bad([p("u.npz")], ["no test set", "--test-fraction"])
    bad([p("u.npz"), "--test-fraction", "0.2", "--layout", "nhwc"], ["--layout nhwc needs samples of shape (H, W, C)"])
    bad([p("src.h5"), "--x", "/images/nope", "--y", "/labels/train", "--test-fraction", "0.2"],
        ["no dataset '/images/nope'", "/images/train"])
    hraw = open(p("src.h5"), "rb").read()
    open(p("cut.h5"), "wb").write(hraw[: len(hraw) * 2 // 3])
    bad([p("cut.h5"), "--x", "/images/train", "--y", "/labels/train", "--test-fraction", "0.2"],
        ["cut.h5", "truncated or corrupt"])
    os.makedirs(p("broken/a"))
    png(p("broken/a/ok.png"), g1, "L")
    open(p("broken/a/zz.png"), "wb").write(b"\x89PNG\r\n\x1a\n this is not a PNG")
    bad([p("broken"), "--test-fraction", "0.5"], ["zz.png", "does not decode"])
    os.makedirs(p("mixed/a"))
    os.makedirs(p("mixed/b"))
    png(p("mixed/a/1.png"), g1, "L")
    png(p("mixed/b/1.png"), rng.integers(0, 256, (6, 10), dtype=np.uint8), "L")
    bad([p("mixed"), "--test-fraction", "0.5"], ["10x6", "10x5", "one size"])
    os.makedirs(p("alpha/a"))
    half = rgba.copy()
    half[2, 3, 3] = 128
    png(p("alpha/a/1.png"), rgb, "RGB")
    png(p("alpha/a/2.png"), half, "RGBA")
    bad([p("alpha"), "--test-fraction", "0.5"], ["2.png", "partly transparent"])

    # Options that do not fit the kind of input.
    bad([p("gray"), "--x", "a", "--y", "b"], ["do not apply to an image folder"])
    bad([p("gray"), "--layout", "nhwc"], ["--layout does not apply to an image folder"])
    bad([p("u.npz"), "--test", p("src.h5")], ["not of the same kind"])
    bad([p("src.h5"), "--test-fraction", "0.2"], ["needs the dataset names", "--x"])
    bad([p("x.npy"), "--test-fraction", "0.2"], ["needs the labels too", "--y"])
    bad([p("notes.txt")], ["cannot tell what", "notes.txt"])
    bad([p("k.npz"), "--test-fraction", "0.2"], ["has its own test set"])

    # A failed import leaves an existing output of the same name untouched.
    before = open(p("h.h5"), "rb").read()
    run(["import", "--x", p("nan.npy"), "--y", p("y.npy"), "--test-fraction", "0.2", "--out", p("h.h5")], ok=False)
    check(open(p("h.h5"), "rb").read() == before, "a failed import changed the existing output file")
    check(not [f for f in os.listdir(d) if ".importing-" in f], "temporary files left behind")

    # --- Fashion-MNIST as Keras ships it (an .npz of uint8 x_train/y_train/x_test/y_test, made here by numpy
    # from Debian's IDX files): the import equals `mirror-data fashion-mnist`'s own conversion, value for value.
    fm = "/usr/share/datasets/fashion-mnist"
    if os.path.isdir(fm):
        def idx(name, offset):
            with gzip.open(os.path.join(fm, name)) as f:
                return np.frombuffer(f.read(), np.uint8, offset=offset)
        np.savez(p("fashion_mnist.npz"),
                 x_train=idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28), y_train=idx("train-labels-idx1-ubyte.gz", 8),
                 x_test=idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28), y_test=idx("t10k-labels-idx1-ubyte.gz", 8))
        run(["import", p("fashion_mnist.npz"), "--out", p("fm-import.h5")])
        run(["fashion-mnist", "--out", p("fm-convert.h5")])
        a, aa = read_out(p("fm-import.h5"))
        b, ba = read_out(p("fm-convert.h5"))
        for split in ("train", "test"):
            exact(a[split][0], b[split][0], f"Fashion-MNIST {split} x: import vs fashion-mnist")
            exact(a[split][1], b[split][1], f"Fashion-MNIST {split} y: import vs fashion-mnist")
        for k in ("num_classes", "x_scale", "x_mean", "x_std"):
            check(aa[k] == ba[k], f"Fashion-MNIST attribute {k}: import {aa[k]} vs fashion-mnist {ba[k]}")
    else:
        print("note: Debian's dataset-fashion-mnist is not installed; its comparison is skipped")

    subprocess.run(["rm", "-rf", d])
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("ok: mirror-data import matches numpy/h5py for every kind; every bad input refused")


main()
