#!/usr/bin/env python3
"""Cross-checks `ivnsec frame protect/verify` against the independent Python reference
(ivnae_ref.py) for every IVN-AE profile that `ivnsec suites --json` lists.

Per profile and random SA (keys, IV, key id, first sequence number, HMAC truncation, replay
window, provider) and a batch of random frames (payloads 0..1500 bytes):
  (a) Python protects -> `ivnsec frame verify -` recovers the plain frames,
  (b) `ivnsec frame protect -` -> Python verifies and decrypts,
  (c) both produce byte-identical frames for the same inputs,
  (d) Python-tampered frames (bit flips, truncation, extension, header fields, replays, reordering
      within and beyond the window) get the same verdict from ivnsec as from the reference; every
      tampered frame must be dropped by ivnsec,
  (e) random sequence numbers around the replay-window edges (W = 0 … 1000) get the same verdicts
      and drop reasons from both,
  (f) version 1 frames (the previous version: nonce without the key id), mixed with version 2
      frames of the same SA, are accepted by `ivnsec frame verify --accept-ivnae-v1` exactly where
      the reference with accept_v1 accepts them, with the same plain frames, and dropped as
      bad_version without the option,
  (g) a version 2 frame with its key id byte changed does not verify under an SA of that key id
      (the key id is part of the nonce / authenticated header).

Usage: crosscheck.py [IVNSEC_BINARY] [--cases N] [--seed S] [-v]
The binary defaults to $IVNSEC or target/debug/ivnsec. Prints `N passed, M failed`; exits 1 on any
failure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ivnae_ref as ref  # noqa: E402


class Checker:
    def __init__(self, binary: str, verbose: bool):
        self.binary = binary
        self.verbose = verbose
        self.passed = 0
        self.failed = 0
        self.reason_diffs: dict[tuple[str, str], int] = {}

    def ok(self) -> None:
        self.passed += 1

    def fail(self, what: str) -> None:
        self.failed += 1
        if self.failed <= 40:
            print(f"FAIL {what}", file=sys.stderr)

    def run(self, args: list[str], lines: list[str]) -> list[str]:
        p = subprocess.run(
            [self.binary, *args],
            input="".join(l + "\n" for l in lines),
            capture_output=True,
            text=True,
        )
        # verify exits 1 when any frame was dropped; 2 and above are usage/environment errors
        if p.returncode not in (0, 1):
            raise RuntimeError(f"{' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
        out = p.stdout.splitlines()
        if len(out) != len(lines):
            raise RuntimeError(f"{' '.join(args)}: {len(lines)} lines in, {len(out)} out; stderr: {p.stderr.strip()}")
        return out


def rand_payload_len(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.3:
        return rng.choice([0, 1, 2, 13, 14, 15, 16, 17, 31, 32, 33, 46, 1499, 1500])
    if r < 0.7:
        return rng.randrange(0, 100)
    return rng.randrange(0, 1501)


def rand_plain(rng: random.Random) -> bytes:
    n = rand_payload_len(rng)
    ethertype = rng.choice([b"\x08\x00", b"\x86\xdd", b"\x22\xf0", b"\x88\xb5", rng.randbytes(2)])
    return rng.randbytes(12) + ethertype + rng.randbytes(n)


def sa_args(sa: dict) -> list[str]:
    a = ["--profile", sa["profile"]]
    if sa["key"]:
        a += ["--key", sa["key"].hex()]
    if sa["mac_key"]:
        a += ["--mac-key", sa["mac_key"].hex()]
    if sa["iv"] is not None:
        a += ["--iv", sa["iv"].hex()]
    if sa["key_id"] is not None:
        a += ["--key-id", str(sa["key_id"])]
    if sa["tag_len"] is not None:
        a += ["--tag-len", str(sa["tag_len"])]
    a += ["--provider", sa["provider"]]
    return a


def ref_sa(sa: dict, window: int = 64, **kw) -> ref.Sa:
    return ref.Sa(
        sa["profile"],
        key=sa["key"],
        mac_key=sa["mac_key"],
        iv=sa["iv"] if sa["iv"] is not None else bytes(12),
        key_id=sa["key_id"] or 0,
        tag_len=sa["tag_len"],
        replay_window=window,
        **kw,
    )


def rand_sa(rng: random.Random, prof: dict) -> dict:
    suite, _ = ref.parse_profile(prof["profile"])
    tag_len = None
    if suite.min_tag_len < suite.full_tag_len and rng.random() < 0.6:
        tag_len = rng.randint(suite.min_tag_len, suite.full_tag_len)
    r = rng.random()
    first = 1 if r < 0.2 else (rng.randrange(1, (1 << 64) - 40) if r < 0.8 else (1 << 64) - rng.randint(40, 200))
    return {
        "profile": prof["profile"],
        "key": rng.randbytes(suite.key_len),
        "mac_key": rng.randbytes(rng.choice([1, 16, 20, 32, 63, 64, 65, 128, 136, 137, 200])) if suite.needs_mac_key else b"",
        "iv": rng.randbytes(12) if rng.random() < 0.7 else None,
        "key_id": rng.randrange(256) if rng.random() < 0.8 else None,
        "tag_len": tag_len,
        "provider": rng.choice(["portable", *prof.get("providers", [])]),
        "first_seq": first,
    }


def tamper(rng: random.Random, frame: bytes, suite: ref.Suite, level: str, tag_len: int) -> bytes:
    """A modified frame that the receiver must drop (for `plain`, only header changes qualify)."""
    f = bytearray(frame)
    kinds = ["header_field", "truncate"]
    if suite.kind != "plain":  # plain has nothing that detects body changes
        kinds += ["extend", "bitflip", "bitflip", "bitflip", "tag"]
    k = rng.choice(kinds)
    if k == "bitflip":
        i = rng.randrange(len(f))
        f[i] ^= 1 << rng.randrange(8)
    elif k == "tag" and tag_len:
        i = len(f) - 1 - rng.randrange(tag_len)
        f[i] ^= 1 << rng.randrange(8)
    elif k == "truncate":
        cut = rng.choice([1, 1, 2, 16, len(f) - 25, len(f)])
        return bytes(f[: max(1, len(f) - cut)]) if suite.kind != "plain" else bytes(f[: rng.randrange(1, 26)])
    elif k == "extend":
        return bytes(f) + rng.randbytes(rng.choice([1, 4, 16]))
    else:
        field = rng.choice(["ethertype", "version", "suite", "key_id", "flags", "flags_reserved", "seq0"])
        if field == "ethertype":
            f[12:14] = rng.choice([b"\x08\x00", b"\x88\xe5", b"\x88\xb6"])
        elif field == "version":
            f[14] = rng.choice([0, 1, 3, 0x81, 0xFF])  # 1: version 1, not accepted by default
        elif field == "suite":
            f[15] = rng.choice([s.id for s in ref.SUITES if s.id != suite.id] + [0x02, 0x15, 0x35, 0x9F, 0xFF])
        elif field == "key_id":
            f[16] ^= rng.randrange(1, 256)
        elif field == "flags":
            f[17] ^= ref.FLAG_CONF  # downgrade / upgrade attempt
        elif field == "flags_reserved":
            f[17] |= 1 << rng.randrange(1, 8)
        else:
            f[18:26] = bytes(8)
    if bytes(f) == frame:  # a tag flip on a tag-less profile: force a header change instead
        f[14] ^= 0x80
    return bytes(f)


def check_case(ck: Checker, rng: random.Random, prof: dict, label: str) -> None:
    sa = rand_sa(rng, prof)
    suite, level = ref.parse_profile(sa["profile"])
    args = sa_args(sa)
    k = rng.randint(2, 8)
    plains = [rand_plain(rng) for _ in range(k)]
    seqs = [sa["first_seq"] + i for i in range(k)]
    desc = f"{label} {' '.join(args)} --seq {sa['first_seq']}"

    # (b)+(c): ivnsec protects a batch; Python produces the same bytes and verifies them.
    rust_frames = ck.run(["frame", "protect", *args, "--seq", str(sa["first_seq"]), "-"], [p.hex() for p in plains])
    tx = ref_sa(sa)
    py_frames = [tx.protect(p, s) for p, s in zip(plains, seqs)]
    rx = ref_sa(sa)
    for i, (rf, pf, p) in enumerate(zip(rust_frames, py_frames, plains)):
        if rf != pf.hex():
            ck.fail(f"(c) frame {i} differs: {desc}\n  plain {p.hex()}\n  ivnsec {rf}\n  python {pf.hex()}")
        else:
            ck.ok()
        try:
            got = rx.verify(bytes.fromhex(rf))
            if got != p:
                ck.fail(f"(b) python recovered a different frame {i}: {desc}")
            else:
                ck.ok()
        except ref.Drop as e:
            ck.fail(f"(b) python dropped ivnsec frame {i} ({e.reason}): {desc}\n  {rf}")

    # (a)+(d): a verify stream of Python frames, tampered copies, replays and reordering.
    window = rng.choice([0, 1, 3, 64, 1024])
    stream: list[tuple[bytes, bool]] = []  # (frame, tampered?)
    order = list(range(k))
    for _ in range(rng.randint(0, 3)):  # local swaps: reordering inside the window
        i = rng.randrange(k - 1)
        order[i], order[i + 1] = order[i + 1], order[i]
    sent: list[int] = []
    for i in order:
        for _ in range(rng.randint(1, 3)):
            stream.append((tamper(rng, py_frames[i], suite, level, tx.tag_len), True))
        stream.append((py_frames[i], False))
        sent.append(i)
        if rng.random() < 0.3:
            stream.append((py_frames[rng.choice(sent)], False))  # a replay
    model = ref_sa(sa, window)
    expected = []
    for f, _ in stream:
        try:
            expected.append(model.verify(f).hex())
        except ref.Drop as e:
            expected.append("DROP " + e.reason)
    vargs = ["frame", "verify", *args, "--replay-window", str(window), "-"]
    got = ck.run(vargs, [f.hex() for f, _ in stream])
    for (f, tampered), want, have in zip(stream, expected, got):
        if tampered and not have.startswith("DROP"):
            ck.fail(f"(d) ivnsec accepted a tampered frame: {desc} W={window}\n  {f.hex()}")
            continue
        w_drop, h_drop = want.startswith("DROP"), have.startswith("DROP")
        if w_drop != h_drop or (not w_drop and want != have):
            tag = "(d)" if tampered else "(a)"
            ck.fail(f"{tag} verdicts differ: {desc} W={window}\n  frame  {f.hex()}\n  python {want}\n  ivnsec {have}")
            continue
        ck.ok()
        if w_drop and want != have:
            key = (want[5:], have[5:])
            ck.reason_diffs[key] = ck.reason_diffs.get(key, 0) + 1


def check_window(ck: Checker, rng: random.Random, prof: dict, window: int) -> None:
    """(e) Replay-window edges: random sequence numbers around the window, some repeated."""
    sa = rand_sa(rng, prof)
    args = sa_args(sa)
    tx = ref_sa(sa)
    base = rng.choice([1, rng.randrange(1, 1 << 63)])
    span = 3 * window + 10
    seqs = [base + rng.randrange(span) for _ in range(60)]
    seqs += [rng.choice(seqs) for _ in range(20)]
    rng.shuffle(seqs)
    plain = rand_plain(rng)
    frames = [tx.protect(plain, s) for s in seqs]
    model = ref_sa(sa, window)
    expected = []
    for f in frames:
        try:
            expected.append(model.verify(f).hex())
        except ref.Drop as e:
            expected.append("DROP " + e.reason)
    got = ck.run(["frame", "verify", *args, "--replay-window", str(window), "-"], [f.hex() for f in frames])
    for s, want, have in zip(seqs, expected, got):
        if want != have:
            ck.fail(f"(e) replay window W={window}, seq {s} (base {base}): python {want[:40]}, ivnsec {have[:40]}")
        else:
            ck.ok()


def check_v1(ck: Checker, rng: random.Random, prof: dict) -> None:
    """(f) Version 1 frames mixed with version 2 frames of one SA, with and without
    --accept-ivnae-v1; (g) a key id byte changed in a version 2 frame."""
    sa = rand_sa(rng, prof)
    suite, _ = ref.parse_profile(sa["profile"])
    args = sa_args(sa)
    v1, v2 = ref_sa(sa, version=ref.VERSION_1), ref_sa(sa)
    base = min(sa["first_seq"], (1 << 64) - 40)
    frames = []
    for i in range(rng.randint(4, 10)):
        plain = rand_plain(rng)
        tx = v1 if rng.random() < 0.6 else v2
        frames.append(tx.protect(plain, base + i))
    # replays across versions: the same number again under the other version
    frames.append(v2.protect(rand_plain(rng), base + rng.randrange(len(frames))))
    window = rng.choice([0, 64])
    for accept in (True, False):
        model = ref_sa(sa, window, accept_v1=accept)
        want = []
        for f in frames:
            try:
                want.append(model.verify(f).hex())
            except ref.Drop as e:
                want.append("DROP " + e.reason)
        extra = ["--accept-ivnae-v1"] if accept else []
        got = ck.run(["frame", "verify", *args, "--replay-window", str(window), *extra, "-"], [f.hex() for f in frames])
        for f, w, h in zip(frames, want, got):
            if w != h:
                ck.fail(f"(f) version {f[14]} accept_v1={accept}: {' '.join(args)} W={window}\n  frame  {f.hex()}\n  python {w}\n  ivnsec {h}")
            else:
                ck.ok()
    # (g): key id byte changed; the receiver has an SA for the new key id under the same key.
    if suite.kind == "plain":
        return  # nothing authenticates the key id of a plain frame
    f = bytearray(v2.protect(rand_plain(rng), base))
    other = (f[16] + rng.randrange(1, 256)) % 256
    f[16] = other
    osa = dict(sa, key_id=other)
    got = ck.run(["frame", "verify", *sa_args(osa), "-"], [bytes(f).hex()])[0]
    try:
        ref_sa(osa).verify(bytes(f))
        ck.fail(f"(g) reference accepted a frame with its key id changed to {other}")
    except ref.Drop as e:
        if got != "DROP bad_tag" or e.reason != "bad_tag":
            ck.fail(f"(g) key id changed to {other}: python {e.reason}, ivnsec {got}: {' '.join(args)}")
        else:
            ck.ok()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary", nargs="?", default=os.environ.get("IVNSEC", "target/debug/ivnsec"))
    ap.add_argument("--cases", type=int, default=int(os.environ.get("CROSSCHECK_CASES", "6")), help="random SAs per profile")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 32)
    rng = random.Random(seed)
    if not os.access(a.binary, os.X_OK):
        print(f"crosscheck: {a.binary} is not an executable (build with `cargo build`)", file=sys.stderr)
        return 2

    out = subprocess.run([a.binary, "suites", "--json"], capture_output=True, text=True, check=True).stdout
    profiles = json.loads(out)["profiles"]
    # IVN-AE profiles only (the list may also hold standard-protocol profiles).
    ivnae = [p for p in profiles if p["profile"].split("/")[0] in ref.SUITE_BY_NAME]
    ck = Checker(a.binary, a.verbose)

    # The suite table itself: ids and tag lengths as the reference reads the specification.
    names = set()
    for p in ivnae:
        suite, level = ref.parse_profile(p["profile"])
        names.add(suite.name)
        sid = int(p["suite_id"], 16) if isinstance(p["suite_id"], str) else p["suite_id"]
        if sid != suite.id or p.get("level", level) != level or p.get("tag_len", suite.full_tag_len) != suite.full_tag_len:
            ck.fail(f"suite table: ivnsec lists {p}, reference has id {suite.id:#04x} level {level} tag {suite.full_tag_len}")
        else:
            ck.ok()
    missing = sorted(set(ref.SUITE_BY_NAME) - names)
    if missing:
        ck.fail(f"suite table: ivnsec does not list {missing}")
    if len(ivnae) != len(ref.all_profiles()):
        ck.fail(f"suite table: ivnsec lists {len(ivnae)} IVN-AE profiles, the reference {len(ref.all_profiles())}")

    for p in ivnae:
        for c in range(a.cases):
            try:
                check_case(ck, rng, p, f"[{p['profile']} case {c}]")
            except Exception as e:  # a crash of the binary or the harness is a failure, not an abort
                ck.fail(f"[{p['profile']} case {c}] {type(e).__name__}: {e}")
        if a.verbose:
            print(f"{p['profile']}: done", file=sys.stderr)

    for p in ivnae:
        if p["profile"] in ("crc32", "aes128-gcm/conf", "hmac-sha256", "aes128-cbc-hmac-sha1"):
            for w in (0, 1, 2, 5, 63, 64, 65, 100, 1000):
                try:
                    check_window(ck, rng, p, w)
                except Exception as e:
                    ck.fail(f"[{p['profile']} window {w}] {type(e).__name__}: {e}")

    for p in ivnae:
        try:
            check_v1(ck, rng, p)
        except Exception as e:
            ck.fail(f"[{p['profile']} version 1] {type(e).__name__}: {e}")

    if ck.reason_diffs:
        print("note: drop reasons that differ (both dropped; the spec fixes the order only partly):")
        for (w, h), n in sorted(ck.reason_diffs.items()):
            print(f"  python {w} / ivnsec {h}: {n}")
    print(f"crosscheck (seed {seed}, {len(ivnae)} profiles, {a.cases} SAs each): {ck.passed} passed, {ck.failed} failed")
    return 1 if ck.failed else 0


if __name__ == "__main__":
    sys.exit(main())
