# mirror_data_checks.py — what the mirror-data tool tests (test_import.py, test_text.py, test_tokenizers.py,
# test_llmc.py) share: the program's path from the command line, a list of failures, check(), and run(), which
# runs mirror-data and checks its exit status and, for an expected failure, the error's words and no crash.
import subprocess
import sys

MIRROR_DATA = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, ok=True, message=None):
    """Runs mirror-data; checks the exit status and (for failures) that every part of `message` is in stderr."""
    p = subprocess.run([MIRROR_DATA] + args, capture_output=True, text=True, timeout=120)
    label = " ".join(args)
    if ok:
        check(p.returncode == 0, f"'{label}' should succeed; exit {p.returncode}: {p.stderr.strip()}")
    else:
        check(p.returncode > 0, f"'{label}' should fail with a non-zero exit (not a signal), got {p.returncode}")
        for part in [message] if isinstance(message, str) else message or []:
            check(part in p.stderr, f"'{label}': '{part}' not in the error: {p.stderr.strip()}")
        check("Segmentation" not in p.stderr, f"'{label}' crashed: {p.stderr.strip()}")
    return p
