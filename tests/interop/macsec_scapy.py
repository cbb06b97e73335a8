#!/usr/bin/env python3
"""MACsec interoperability of `ivnsec frame protect/verify` with scapy and tshark.

For every suite scapy's `scapy.contrib.macsec.MACsecSA` supports (GCM-AES-128, GCM-AES-256,
GCM-AES-XPN-128, GCM-AES-XPN-256), integrity only and confidentiality, SCI in the SecTAG or not,
with random keys / SCI / AN / PN (XPN: random 64-bit PN, SSCI, salt) and random frames
(payload 0..1500 octets, so both SL != 0 and SL = 0 frames occur):
  (a) `ivnsec frame protect -` -> scapy decrypts, verifies and decapsulates to the plain frame;
  (b) scapy encapsulates and encrypts -> `ivnsec frame verify -` recovers the plain frame;
  (c) the two protected frames are byte-identical;
  (d) a frame with one flipped bit is dropped by ivnsec and refused by scapy.
Then every frame ivnsec protected is written to a pcap and dissected by `tshark -V`: each must
show an 802.1AE layer, and no line may report a malformed packet or an expert error.

Usage: macsec_scapy.py IVNSEC_BINARY [--cases N] [--frames N] [--seed S] [--no-tshark] [-v]
Prints `N passed, M failed`; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

from scapy.config import conf

conf.verb = 0
from scapy.contrib.macsec import MACsec, MACsecSA  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402
from scapy.utils import wrpcap  # noqa: E402

try:
    from cryptography.exceptions import InvalidTag  # noqa: E402
except ImportError:  # pragma: no cover
    InvalidTag = Exception

SUITES = {
    "macsec-gcm-aes-128": (16, False),
    "macsec-gcm-aes-256": (32, False),
    "macsec-gcm-aes-xpn-128": (16, True),
    "macsec-gcm-aes-xpn-256": (32, True),
}
ETHERTYPES = [0x88B5, 0x88B6, 0x9000, 0x88B7]


class Checker:
    def __init__(self, binary: str, verbose: bool):
        self.binary = binary
        self.verbose = verbose
        self.passed = 0
        self.failed = 0

    def check(self, cond: bool, what: str) -> bool:
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            if self.failed <= 40:
                print(f"FAIL {what}", file=sys.stderr)
        return cond

    def run(self, args: list[str], lines: list[str]) -> tuple[int, list[str], str]:
        p = subprocess.run(
            [self.binary, *args],
            input="".join(line + "\n" for line in lines),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if self.verbose:
            print("$ ivnsec " + " ".join(args), file=sys.stderr)
        return p.returncode, p.stdout.splitlines(), p.stderr


def rand_mac(rng: random.Random) -> bytes:
    b = bytearray(rng.randbytes(6))
    b[0] &= 0xFE  # unicast
    return bytes(b)


def rand_frame(rng: random.Random) -> bytes:
    n = rng.choice([0, 1, rng.randrange(0, 46), rng.randrange(46, 60), rng.randrange(0, 1500)])
    return (
        rand_mac(rng)
        + rand_mac(rng)
        + rng.choice(ETHERTYPES).to_bytes(2, "big")
        + rng.randbytes(n)
    )


def scapy_sa(case: dict, pn: int) -> MACsecSA:
    kw = {}
    if case["xpn"]:
        kw = dict(xpn_en=True, ssci=case["ssci"], salt=case["salt"])
    return MACsecSA(
        sci=case["sci"],
        an=case["an"],
        pn=pn,
        key=case["key"],
        icvlen=16,
        encrypt=1 if case["conf"] else 0,
        send_sci=1 if case["send_sci"] else 0,
        **kw,
    )


def scapy_protect(case: dict, pn: int, plain: bytes) -> bytes:
    sa = scapy_sa(case, pn)
    return bytes(sa.encrypt(sa.encap(Ether(plain))))


def scapy_unprotect(case: dict, pn: int, frame: bytes) -> bytes | None:
    sa = scapy_sa(case, pn)
    try:
        return bytes(sa.decap(sa.decrypt(Ether(frame))))
    except InvalidTag:
        return None


def one_case(ck: Checker, rng: random.Random, profile: str, conf_: bool, send_sci: bool,
             nframes: int, protected_out: list[bytes]) -> None:
    key_len, xpn = SUITES[profile]
    case = {
        "key": rng.randbytes(key_len),
        "sci": rand_mac(rng) + rng.randrange(1, 1 << 16).to_bytes(2, "big"),
        "an": rng.randrange(4),
        "conf": conf_,
        "send_sci": send_sci,
        "xpn": xpn,
        "ssci": rng.randbytes(4),
        "salt": rng.randbytes(12),
    }
    if xpn:
        # Sometimes start just below a 2^32 boundary so the batch crosses it.
        first = rng.choice([rng.randrange(1, 1 << 62), (rng.randrange(0, 1 << 20) << 32) | 0xFFFFFFFE])
    else:
        first = rng.choice([1, rng.randrange(1, (1 << 32) - nframes - 1)])
    label = f"{profile} {'conf' if conf_ else 'integrity'} {'sci' if send_sci else 'no-sci'} pn={first:#x}"
    common = ["--profile", profile, "--key", case["key"].hex(), "--sci", case["sci"].hex(),
              "--an", str(case["an"]), "--provider", rng.choice(["portable", "fast"])]
    if xpn:
        common += ["--ssci", case["ssci"].hex(), "--salt", case["salt"].hex()]
    plains = [rand_frame(rng) for _ in range(nframes)]

    # (a) ivnsec protects, scapy unprotects.
    pargs = ["frame", "protect", *common, "--pn", str(first)]
    if not conf_:
        pargs.append("--integrity-only")
    if not send_sci:
        pargs.append("--no-sci")
    rc, ours, err = ck.run(pargs + ["-"], [p.hex() for p in plains])
    if not ck.check(rc == 0 and len(ours) == nframes, f"{label}: protect exit {rc}: {err.strip()}"):
        return
    ours_b = [bytes.fromhex(x) for x in ours]
    protected_out.extend(ours_b)
    for i, (plain, frame) in enumerate(zip(plains, ours_b)):
        got = scapy_unprotect(case, first + i, frame)
        ck.check(got == plain, f"{label}: scapy cannot unprotect ivnsec frame {i}")
        # (c) byte-identical with scapy's own protection.
        theirs = scapy_protect(case, first + i, plain)
        ck.check(theirs == frame, f"{label}: frame {i} differs from scapy's\n ours   {frame.hex()}\n theirs {theirs.hex()}")

    # (b) scapy protects, ivnsec verifies (a fresh receiver; lowest PN = first PN).
    theirs = [scapy_protect(case, first + i, p) for i, p in enumerate(plains)]
    vargs = ["frame", "verify", *common, "--lowest-pn", str(first), "--replay-window", "64"]
    rc, back, err = ck.run(vargs + ["-"], [t.hex() for t in theirs])
    ck.check(rc == 0, f"{label}: verify exit {rc}: {err.strip()}")
    for i, plain in enumerate(plains):
        ck.check(i < len(back) and back[i] == plain.hex(), f"{label}: ivnsec did not recover scapy frame {i}")

    # (d) one flipped bit: ivnsec drops, scapy refuses (or sees a different frame).
    i = rng.randrange(nframes)
    bad = bytearray(theirs[i])
    pos = rng.randrange(12, len(bad))  # after the addresses: SecTAG, data or ICV
    bad[pos] ^= 1 << rng.randrange(8)
    rc, back, _ = ck.run(vargs + ["-"], [bytes(bad).hex()])
    ck.check(rc == 1 and len(back) == 1 and back[0].startswith("DROP "), f"{label}: flipped byte {pos} not dropped: {back}")
    try:
        got = scapy_unprotect(case, first + i, bytes(bad))
    except Exception:  # a flipped SecTAG may not even parse for scapy
        got = None
    ck.check(got != plains[i], f"{label}: scapy accepted a flipped frame")


def tshark_check(ck: Checker, frames: list[bytes], verbose: bool) -> None:
    tshark = shutil.which("tshark")
    if not ck.check(tshark is not None, "tshark not installed"):
        return
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ivnsec-macsec.pcap")
        wrpcap(path, [Ether(f) for f in frames])
        p = subprocess.run([tshark, "-r", path, "-V"], capture_output=True, text=True, timeout=300)
        ck.check(p.returncode == 0, f"tshark exit {p.returncode}: {p.stderr.strip()[:500]}")
        out = p.stdout
        bad = [line for line in out.splitlines()
               if "[Malformed" in line or ("Expert Info (Error" in line) or "Severity level: Error" in line]
        ck.check(not bad, "tshark reports errors:\n  " + "\n  ".join(bad[:10]))
        n_layers = out.count("802.1AE Security tag")
        ck.check(n_layers == len(frames), f"tshark shows {n_layers} 802.1AE SecTAGs for {len(frames)} frames")
        if verbose:
            print(out.split("\n\n")[0], file=sys.stderr)
        # The dissected fields of the first frame agree with what we wrote.
        first = frames[0]
        pn = int.from_bytes(first[16:20], "big")
        ck.check(f"packet number: {pn}" in out.lower(), f"tshark does not show PN {pn}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary", nargs="?", default=os.environ.get("IVNSEC", "target/debug/ivnsec"))
    ap.add_argument("--cases", type=int, default=2, help="random SAs per suite/mode combination")
    ap.add_argument("--frames", type=int, default=12, help="frames per SA")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--no-tshark", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(1 << 32)
    rng = random.Random(seed)
    print(f"macsec_scapy: seed {seed}", file=sys.stderr)
    ck = Checker(a.binary, a.verbose)
    protected: list[bytes] = []
    for profile in SUITES:
        for conf_ in (False, True):
            for send_sci in (True, False):
                for _ in range(a.cases):
                    one_case(ck, rng, profile, conf_, send_sci, a.frames, protected)
    if not a.no_tshark and protected:
        tshark_check(ck, protected, a.verbose)
    print(f"{ck.passed} passed, {ck.failed} failed")
    return 1 if ck.failed else 0


if __name__ == "__main__":
    sys.exit(main())
