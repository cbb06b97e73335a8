#!/usr/bin/env python3
"""Cross-checks `ivnsec frame protect/verify` for the SecOC profiles against the independent
Python reference (secoc_ref.py, `cryptography` CMAC/HMAC).

Per random case (profile, provider, key, Data ID, bit lengths, first freshness value, a batch of
random Authentic I-PDUs):
  (a) `ivnsec frame protect -` and the reference produce byte-identical Secured I-PDUs,
  (b) the reference verifies every PDU ivnsec protected (ivnsec -> Python),
  (c) a stream made by the reference — in order, with losses (some longer than 2**fv_bits),
      replays, reordering, bit flips, truncation, extension, set padding bits — gets exactly the
      same output line from `ivnsec frame verify -` as from the reference model (the Authentic
      I-PDU or `DROP <reason>`), for a random receiver (last freshness, acceptance window, verify
      attempts) (Python -> ivnsec),
  (d) every tampered PDU is dropped by ivnsec.
Fixed cases cover non-byte-aligned lengths (fv 3 / mac 28 / full 40 and others), freshness
values just below a roll-over of the truncated part and of the upper part, and the last values
before exhaustion.

Usage: secoc_crosscheck.py [IVNSEC_BINARY] [--cases N] [--seed S] [-v]
The binary defaults to $IVNSEC or target/debug/ivnsec. Prints `N passed, M failed`; exits 1 on
any failure.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import secoc_ref as ref  # noqa: E402


class Checker:
    def __init__(self, binary: str, verbose: bool):
        self.binary = binary
        self.verbose = verbose
        self.passed = 0
        self.failed = 0
        self.calls = 0
        self.outcomes: dict[str, int] = {}

    def ok(self) -> None:
        self.passed += 1

    def fail(self, what: str) -> None:
        self.failed += 1
        if self.failed <= 40:
            print(f"FAIL {what}", file=sys.stderr)

    def run(self, args: list[str], lines: list[str]) -> list[str]:
        self.calls += 1
        p = subprocess.run(
            [self.binary, *args],
            input="".join(line + "\n" for line in lines),
            capture_output=True,
            text=True,
        )
        # verify exits 1 when any PDU was dropped; 2 and above are usage/environment errors
        if p.returncode not in (0, 1):
            raise RuntimeError(f"{' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
        out = p.stdout.splitlines()
        if len(out) != len(lines):
            raise RuntimeError(f"{' '.join(args)}: {len(lines)} lines in, {len(out)} out; stderr: {p.stderr.strip()}")
        return out


def rand_case(rng: random.Random, fixed: tuple[int, int, int] | None = None) -> dict:
    profile = rng.choice(sorted(ref.PROFILES))
    out_bits, key_len = ref.PROFILES[profile]
    if fixed:
        fv_bits, mac_bits, full = fixed
        mac_bits = min(mac_bits, out_bits)
    else:
        full = rng.choice([1, 2, 3, 7, 8, 9, 16, 24, 31, 32, 33, 40, 48, 63, 64, rng.randint(1, 64)])
        fv_bits = rng.choice([0, 1, 3, 4, 7, 8, 9, 12, 16, full, rng.randint(0, full)])
        fv_bits = min(fv_bits, full)
        mac_bits = rng.choice([1, 4, 8, 13, 24, 28, 31, 32, 64, 100, out_bits, rng.randint(1, out_bits)])
    max_fv = (1 << full) - 1
    n = 2**fv_bits
    r = rng.random()
    if r < 0.25:
        first = 1
    elif r < 0.5:  # just below a roll-over of the truncated part (or of the upper part)
        k = rng.randrange(1, max(2, (max_fv + 1) // n)) if n <= max_fv else 1
        first = max(1, min(max_fv, k * n - rng.randint(1, 3)))
    elif r < 0.6:  # the last values before exhaustion
        first = max(1, max_fv - rng.randint(0, 5))
    else:
        first = rng.randint(1, max_fv)
    key = rng.randbytes(key_len if key_len else rng.choice([1, 16, 32, 64, 65, 100]))
    return {
        "profile": profile,
        "key": key,
        "data_id": rng.randrange(1 << 16),
        "fv_bits": fv_bits,
        "mac_bits": mac_bits,
        "full": full,
        "first": first,
        "provider": rng.choice(["portable", "fast", "auto"]),
    }


def sa_args(c: dict) -> list[str]:
    return [
        "--profile", c["profile"],
        "--key", c["key"].hex(),
        "--data-id", str(c["data_id"]) if c["data_id"] % 2 else hex(c["data_id"]),
        "--fv-bits", str(c["fv_bits"]),
        "--mac-bits", str(c["mac_bits"]),
        "--full-fv-bits", str(c["full"]),
        "--provider", c["provider"],
    ]


def cfg_of(c: dict) -> ref.Config:
    return ref.Config(c["profile"], c["key"], c["data_id"], c["fv_bits"], c["mac_bits"], c["full"])


def tamper(rng: random.Random, s: bytes, cfg: ref.Config) -> bytes:
    """A modified Secured I-PDU (it may still be valid by chance only when mac_bits is tiny)."""
    f = bytearray(s)
    k = rng.choice(["flip", "flip", "flip", "info", "truncate", "extend", "pad"])
    pad = 8 * cfg.info_len - cfg.fv_bits - cfg.mac_bits
    if k == "pad" and pad:
        f[-1] ^= 1 << rng.randrange(pad)
    elif k == "info":
        bit = rng.randrange(cfg.fv_bits + cfg.mac_bits)
        pos = 8 * (len(f) - cfg.info_len) + bit
        f[pos // 8] ^= 0x80 >> (pos % 8)
    elif k == "truncate":
        return bytes(f[: rng.randrange(0, len(f))])
    elif k == "extend":
        return bytes(f) + rng.randbytes(rng.choice([1, 2, 4]))
    else:
        i = rng.randrange(len(f))
        f[i] ^= 1 << rng.randrange(8)
    if bytes(f) == s:
        f[-1] ^= 0x80
    return bytes(f)


def check_case(ck: Checker, rng: random.Random, c: dict, label: str) -> None:
    cfg = cfg_of(c)
    args = sa_args(c)
    room = cfg.max_fv - c["first"] + 1
    k = min(rng.randint(1, 40), room)
    pdus = [rng.randbytes(rng.choice([1, 2, 3, 8, 16, 17, rng.randint(1, 64)])) for _ in range(k)]
    desc = f"{label} {' '.join(args)} --freshness {c['first']}"

    # (a)+(b): ivnsec protects the batch; the reference makes the same bytes and verifies them.
    rust = ck.run(["frame", "protect", *args, "--freshness", str(c["first"]), "-"], [p.hex() for p in pdus])
    tx = ref.Sender(cfg, c["first"])
    py = [tx.protect(p) for p in pdus]
    rx = ref.Receiver(cfg, last=c["first"] - 1)
    for i, (r, p, plain) in enumerate(zip(rust, py, pdus)):
        if r != p.hex():
            ck.fail(f"(a) PDU {i} differs: {desc}\n  pdu {plain.hex()}\n  ivnsec {r}\n  python {p.hex()}")
        else:
            ck.ok()
        try:
            got, fv = rx.verify(bytes.fromhex(r))
            if got != plain or fv != c["first"] + i:
                ck.fail(f"(b) python recovered PDU {i} wrongly (fv {fv}): {desc}")
            else:
                ck.ok()
        except ref.Drop as e:
            ck.fail(f"(b) python dropped ivnsec PDU {i} ({e.reason}): {desc}\n  {r}")

    # (c)+(d): a receive stream with losses, replays, reordering and tampering.
    n = 2 ** c["fv_bits"]
    stream: list[tuple[bytes, bool]] = []
    i = 0
    sent: list[int] = []
    while i < k:
        for _ in range(rng.choice([0, 0, 1, 2])):
            stream.append((tamper(rng, py[i], cfg), True))
        stream.append((py[i], False))
        sent.append(i)
        x = rng.random()
        if x < 0.15 and sent:
            stream.append((py[rng.choice(sent)], False))  # replay
        elif x < 0.25 and i + 1 < k:
            stream.append((py[i + 1], False))  # reordering: i+1 before i+2 … and again later
        i += 1
        if rng.random() < 0.2:  # loss, sometimes of a whole period of the truncated FV or more
            i += rng.choice([1, 2, n - 1, n, n + 1, 2 * n])
    last = c["first"] - 1 - (rng.choice([0, 0, 1, n, rng.randint(0, 3 * n)]) if c["first"] > 1 else 0)
    last = max(0, last)
    window = rng.choice([None, None, 1, 2, n, n + 1, 2 * n, 3 * n + 5, rng.randint(1, 4 * n + 8)])
    if window is not None:
        window = min(window, 2**64 - 1)  # a u64 on the command line
    attempts = rng.choice([0, 0, 1, 2, 3])
    model = ref.Receiver(cfg, last=last, window=window, attempts=attempts)
    expected = []
    for f, _ in stream:
        try:
            expected.append(model.verify(f)[0].hex())
        except ref.Drop as e:
            expected.append("DROP " + e.reason)
    vargs = ["frame", "verify", *args, "--last-freshness", str(last), "--verify-attempts", str(attempts)]
    if window is not None:
        vargs += ["--acceptance-window", str(window)]
    # Blank lines are skipped by the batch reader: a tampered PDU cut to nothing is left out.
    kept = [(f, t, e) for (f, t), e in zip(stream, expected) if f]
    for key, v in model.counters.items():
        ck.outcomes[key] = ck.outcomes.get(key, 0) + v
    got = ck.run([*vargs, "-"], [f.hex() for f, _, _ in kept])
    for (f, tampered, want), have in zip(kept, got):
        if tampered and not have.startswith("DROP") and cfg.mac_bits >= 24:
            ck.fail(f"(d) ivnsec accepted a tampered PDU: {desc} last={last} W={window} A={attempts}\n  {f.hex()}")
            continue
        if want != have:
            tag = "(d)" if tampered else "(c)"
            ck.fail(f"{tag} verdicts differ: {desc} last={last} W={window} A={attempts}\n  pdu    {f.hex()}\n  python {want}\n  ivnsec {have}")
            continue
        ck.ok()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary", nargs="?", default=os.environ.get("IVNSEC", "target/debug/ivnsec"))
    ap.add_argument("--cases", type=int, default=int(os.environ.get("SECOC_CASES", "200")), help="random cases")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 32)
    rng = random.Random(seed)
    if not os.access(a.binary, os.X_OK):
        print(f"secoc_crosscheck: {a.binary} is not an executable (build with `cargo build`)", file=sys.stderr)
        return 2
    ref.selftest()
    ck = Checker(a.binary, a.verbose)

    fixed = [(3, 28, 40), (8, 24, 64), (0, 24, 16), (1, 1, 1), (5, 13, 31), (7, 9, 9), (64, 128, 64), (12, 100, 48)]
    jobs: list[tuple[str, dict]] = []
    for f in fixed:
        for j in range(6):
            jobs.append((f"[fixed {f} #{j}]", rand_case(rng, f)))
    for j in range(a.cases):
        jobs.append((f"[case {j}]", rand_case(rng)))
    for label, c in jobs:
        try:
            check_case(ck, rng, c, label)
        except Exception as e:  # a crash of the binary or the harness is a failure, not an abort
            ck.fail(f"{label} {type(e).__name__}: {e}")
        if a.verbose:
            print(f"{label}: done", file=sys.stderr)

    print("verify-stream outcomes (reference model): " + ", ".join(f"{k}={v}" for k, v in sorted(ck.outcomes.items())))
    print(
        f"secoc crosscheck (seed {seed}, {len(jobs)} cases, {ck.calls} ivnsec runs): "
        f"{ck.passed} passed, {ck.failed} failed"
    )
    return 1 if ck.failed else 0


if __name__ == "__main__":
    sys.exit(main())
