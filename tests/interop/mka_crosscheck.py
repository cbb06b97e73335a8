#!/usr/bin/env python3
"""Cross-checks the Rust MKA participant (`ivnsec_core::mka`, driven by the test tool
`target/debug/examples/mka_peer`) against the independent Python reference (mka_ref.py).

The Python side is a second CA member that speaks only what mka_ref.py implements from the
standard. Per case (cipher suite, 128/256-bit CAK, random CKN of 1..32 octets, random SCIs,
crypto provider):

  python_key_server: the reference is key server. It verifies the ICV of every MKPDU the Rust
    member sends and decodes it by clause 11.11; answers listing it (the Rust member must report
    it live and elect it), distributes a SAK it derives and wraps itself (with the cipher suite
    field unless GCM-AES-128, with its SSCI in the Live Peer List for XPN), and checks that the
    Rust member installs exactly that SAK, AN, salt and SSCIs, reports it in its SAK Use set,
    and starts transmitting once the reference does.
  rust_key_server: the Rust member is key server. The reference unwraps the Distributed SAK with
    its own KEK and checks it equals the SAK the Rust member installed; checks the salt, the SSCIs
    and the key server SSCI octet, reports the SAK installed and checks that the Rust member then
    transmits with it.
  Distributed CAK: the key server of the two (either side) distributes a random group CAK of
    either size with a random CKN; the other side must unwrap exactly it (the reference with
    its own KEK, the Rust member announcing it once as cak_distributed); one from the member
    that is not key server is refused (dcak_not_from_key_server), one under another KEK too
    (dcak_unwrap).
  Both: a replayed MKPDU is dropped as stale_mn, a bit flip as bad_icv, another CKN as
  unknown_ckn.

Usage: mka_crosscheck.py [MKA_PEER_BINARY] [--seed S] [-v]
Prints `N passed, M failed`; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mka_ref as ref  # noqa: E402

SECOND = 1_000_000_000


class Rust:
    """The Rust participant behind the line protocol of examples/mka_peer.rs."""

    def __init__(self, binary: str, args: list[str]):
        self.p = subprocess.Popen([binary, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.tx: list[bytes] = []
        self.events: list[list[str]] = []
        self.result = self._read()

    def _read(self) -> str | None:
        result = None
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("mka_peer exited")
            w = line.split()
            if w[0] == "done":
                return result
            if w[0] == "tx":
                self.tx.append(bytes.fromhex(w[1]))
            elif w[0] in ("ok", "drop"):
                result = line.strip()
            else:
                self.events.append(w)

    def cmd(self, line: str) -> str | None:
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self._read()

    def rx(self, t: int, frame: bytes) -> str | None:
        return self.cmd(f"rx {t} {frame.hex()}")

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait(timeout=10)

    def event(self, kind: str) -> list[str] | None:
        found = [e for e in self.events if e[0] == kind]
        return found[-1] if found else None


class Check:
    def __init__(self, verbose: bool):
        self.passed = 0
        self.failed = 0
        self.verbose = verbose

    def __call__(self, ok: bool, what: str) -> bool:
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            if self.failed <= 40:
                print(f"FAIL {what}", file=sys.stderr)
        return ok


def case(binary: str, rng: random.Random, suite: str, cak_len: int, provider: str, py_ks: bool, check: Check) -> None:
    sid, sak_len, xpn = ref.SUITES[suite]
    cak = rng.randbytes(cak_len)
    ckn = rng.randbytes(rng.randint(1, 32))
    ick, kek = ref.ick(cak, ckn), ref.kek(cak, ckn)
    py_mac = bytes([0x02, 0x10, 0, 0, 0, rng.randrange(256)])
    rs_mac = bytes([0x02, 0x20, 0, 0, 0, rng.randrange(256)])
    py_sci, rs_sci = py_mac + b"\x00\x01", rs_mac + b"\x00\x01"
    py_mi = rng.randbytes(12)
    name = f"{suite} cak{8 * cak_len} ckn{len(ckn)} {provider} {'python' if py_ks else 'rust'} key server"
    rust = Rust(binary, ["--cak", cak.hex(), "--ckn", ckn.hex(), "--suite", suite, "--sci", rs_sci.hex(),
                         "--priority", "20" if py_ks else "1", "--provider", provider])
    t = 0
    py_mn = 0

    def send(m: ref.Mkpdu) -> str | None:
        nonlocal py_mn, t
        py_mn += 1
        m.mn = py_mn
        t += SECOND // 10
        return rust.rx(t, ref.encode(m, py_mac, ick))

    def last_rust() -> ref.Mkpdu | None:
        try:
            return ref.decode(rust.tx[-1], ick)
        except (ValueError, ref.Malformed) as e:
            check(False, f"{name}: reference cannot decode the Rust MKPDU: {e}")
            return None

    try:
        first = last_rust()
        if not first:
            return
        check(first.ckn == ckn and first.sci == rs_sci and first.agility == ref.AGILITY and first.version == 3,
              f"{name}: basic parameter set {first}")
        base = dict(sci=py_sci, mi=py_mi, ckn=ckn, priority=5 if py_ks else 255)
        r = send(ref.Mkpdu(potential=[(first.mi, first.mn)], **base))
        check(r == "ok", f"{name}: first reference MKPDU: {r}")
        check(rust.event("peer_live") == ["peer_live", py_sci.hex(), py_mi.hex()], f"{name}: peer live {rust.events}")
        ks = rust.event("key_server")
        want_ks = [py_sci.hex(), "peer"] if py_ks else [rs_sci.hex(), "self"]
        check(ks is not None and ks[1:] == want_ks, f"{name}: key server {ks}")
        m = last_rust()
        if not m:
            return
        check(m.live is not None and (py_mi, py_mn) in m.live, f"{name}: Rust lists the reference live")
        check(m.key_server == (not py_ks), f"{name}: key server flag {m.key_server}")
        members = ref.sscis([py_sci, rs_sci])

        if py_ks:
            kn, an = rng.randint(1, 1 << 31), rng.randrange(4)
            nonce = rng.randbytes(sak_len)
            key = ref.sak(cak, nonce, [py_mi, m.mi], kn, sak_len)
            wrapped = ref.wrap(kek, key)
            dsak = (an, 1, kn, None if sid == 0x0080C20001000001 else sid, wrapped)
            use = ref.SakUse(lan=an, lrx=True, latest_mi=py_mi, latest_kn=kn, latest_lpn=1)
            r = send(ref.Mkpdu(key_server=True, live=[(m.mi, m.mn)], ks_ssci=members[py_sci] if xpn else 0,
                               sak_use=use, dsak=dsak, xpn=(0, 0) if xpn else None, **base))
            check(r == "ok", f"{name}: distributed SAK: {r}")
            ev = rust.event("install_rx")
            want_salt = ref.salt(py_mi, kn).hex() if xpn else "-"
            want_scs = f"{py_sci.hex()}:{members[py_sci] if xpn else '-'}"
            check(ev == ["install_rx", py_mi.hex(), str(kn), str(an), key.hex(), want_salt, want_scs],
                  f"{name}: install_rx {ev} want SAK {key.hex()} salt {want_salt} scs {want_scs}")
            m = last_rust()
            if not m:
                return
            u = m.sak_use
            check(u is not None and u.latest_mi == py_mi and u.latest_kn == kn and u.lrx and not u.ltx
                  and u.lan == an, f"{name}: Rust SAK Use after install {u}")
            check(m.dsak is None, f"{name}: a member that is not key server sends no SAK")
            use.ltx = True
            r = send(ref.Mkpdu(key_server=True, live=[(m.mi, m.mn)], sak_use=use,
                               xpn=(0, 0) if xpn else None, **base))
            check(r == "ok", f"{name}: key server transmits: {r}")
            ev = rust.event("install_tx")
            check(ev == ["install_tx", py_mi.hex(), str(kn), str(an), str(members[rs_sci]) if xpn else "-"],
                  f"{name}: install_tx {ev}")
            t += 2 * SECOND
            rust.cmd(f"tick {t}")
            m = last_rust()
            check(m is not None and m.sak_use is not None and m.sak_use.ltx and m.sak_use.lrx,
                  f"{name}: Rust reports transmitting {m and m.sak_use}")
            check(m is not None and (m.xpn is not None) == xpn, f"{name}: XPN parameter set {m and m.xpn}")
            # The reference (key server) distributes a group CAK; repeated, it is announced once.
            gcak, gckn = rng.randbytes(rng.choice((16, 32))), rng.randbytes(rng.randint(1, 32))
            body = ref.dcak_body(kek, gcak, gckn)
            for _ in range(2):
                r = send(ref.Mkpdu(key_server=True, live=[(m.mi, m.mn)], sak_use=use, dcak=body,
                                   xpn=(0, 0) if xpn else None, **base))
                check(r == "ok", f"{name}: distributed CAK: {r}")
            got = [e for e in rust.events if e[0] == "cak_distributed"]
            check(got == [["cak_distributed", gcak.hex(), gckn.hex()]],
                  f"{name}: Rust got {got}, want CAK {gcak.hex()} CKN {gckn.hex()}")
            other_kek = ref.kek(bytes(cak_len), ckn)
            r = send(ref.Mkpdu(key_server=True, live=[(m.mi, m.mn)], sak_use=use,
                               dcak=ref.dcak_body(other_kek, gcak, gckn), xpn=(0, 0) if xpn else None, **base))
            check(r == "drop dcak_unwrap", f"{name}: CAK under another KEK: {r}")
        else:
            d = m.dsak
            if not check(d is not None, f"{name}: Rust key server distributes a SAK"):
                return
            an, co, kn, suite_id, wrapped = d
            check(suite_id == (None if sid == 0x0080C20001000001 else sid), f"{name}: cipher suite field {suite_id}")
            check(co == 1, f"{name}: confidentiality offset {co}")
            try:
                key = ref.unwrap(kek, wrapped)
            except Exception as e:  # InvalidUnwrap
                check(False, f"{name}: reference cannot unwrap the SAK: {e}")
                return
            ev = rust.event("install_rx")
            want_salt = ref.salt(m.mi, kn).hex() if xpn else "-"
            check(ev is not None and ev[1:7] == [m.mi.hex(), str(kn), str(an), key.hex(), want_salt,
                                                 f"{py_sci.hex()}:{members[py_sci] if xpn else '-'}"],
                  f"{name}: Rust installed {ev}, reference unwrapped {key.hex()}")
            check(len(key) == sak_len, f"{name}: SAK length {len(key)}")
            check(m.ks_ssci == (members[rs_sci] if xpn else 0), f"{name}: key server SSCI octet {m.ks_ssci}")
            check(m.sak_use is not None and m.sak_use.lrx and not m.sak_use.ltx, f"{name}: KS SAK Use {m.sak_use}")
            use = ref.SakUse(lan=an, lrx=True, latest_mi=m.mi, latest_kn=kn, latest_lpn=1)
            r = send(ref.Mkpdu(live=[(m.mi, m.mn)], sak_use=use, xpn=(0, 0) if xpn else None, **base))
            check(r == "ok", f"{name}: member reports the SAK installed: {r}")
            ev = rust.event("install_tx")
            check(ev == ["install_tx", m.mi.hex(), str(kn), str(an), str(members[rs_sci]) if xpn else "-"],
                  f"{name}: install_tx {ev}")
            m2 = last_rust()
            check(m2 is not None and m2.sak_use is not None and m2.sak_use.ltx and m2.dsak is None,
                  f"{name}: key server transmits and stops distributing {m2}")
            # The Rust key server distributes a group CAK; the reference unwraps it with its KEK.
            gcak, gckn = rng.randbytes(rng.choice((16, 32))), rng.randbytes(rng.randint(1, 32))
            rust.cmd(f"dcak {t} {gcak.hex()} {gckn.hex()}")
            m3 = last_rust()
            if check(m3 is not None and m3.dcak is not None, f"{name}: Rust key server sends the CAK {m3}"):
                try:
                    got = ref.unwrap_dcak(kek, m3.dcak)
                except ValueError as e:
                    got = (b"", str(e).encode())
                check(got == (gcak, gckn), f"{name}: reference unwrapped {got}, want {gcak.hex()} {gckn.hex()}")
            # From the reference, not key server: refused.
            r = send(ref.Mkpdu(live=[(m.mi, m.mn)], sak_use=use, dcak=ref.dcak_body(kek, gcak, gckn),
                               xpn=(0, 0) if xpn else None, **base))
            check(r == "drop dcak_not_from_key_server", f"{name}: CAK from a member: {r}")
            rust.cmd(f"nodcak {t}")
            t += 3 * SECOND
            rust.cmd(f"tick {t}")
            m3 = last_rust()
            check(m3 is not None and m3.dcak is None, f"{name}: stopped distributing the CAK")

        # Hostile input: a replay, a flipped bit, another CKN.
        frame = ref.encode(ref.Mkpdu(live=[(m.mi, m.mn)], mn=py_mn, **base), py_mac, ick)
        check(rust.rx(t, frame) == "drop stale_mn", f"{name}: replay")
        py_mn += 1
        bad = bytearray(ref.encode(ref.Mkpdu(live=[(m.mi, m.mn)], mn=py_mn, **base), py_mac, ick))
        bad[rng.randrange(18 + 36, len(bad))] ^= 1 << rng.randrange(8)
        res = rust.rx(t, bytes(bad))
        # A flip inside the CKN names another CA; anywhere else the ICV fails.
        check(res in ("drop bad_icv", "drop malformed", "drop unknown_ckn"), f"{name}: bit flip gave {res}")
        other = dict(base, ckn=bytes(len(ckn) - 1) + bytes([ckn[-1] ^ 0xFF]))
        frame = ref.encode(ref.Mkpdu(mn=py_mn + 1, **other), py_mac, ick)
        check(rust.rx(t, frame) == "drop unknown_ckn", f"{name}: foreign CKN")
    finally:
        rust.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary", nargs="?", default=os.environ.get("MKA_PEER", "target/debug/examples/mka_peer"))
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    if not os.access(a.binary, os.X_OK):
        print(f"mka_crosscheck: {a.binary} not found; build it: cargo build -p ivnsec-conformance --example mka_peer",
              file=sys.stderr)
        return 2
    seed = a.seed if a.seed is not None else random.randrange(1 << 32)
    print(f"mka_crosscheck: seed {seed}; reference self-test: {ref.self_test()} known answers")
    rng = random.Random(seed)
    check = Check(a.v)
    for suite in ref.SUITES:
        for cak_len in (16, 32):
            for provider in ("portable", "fast"):
                for py_ks in (True, False):
                    case(a.binary, rng, suite, cak_len, provider, py_ks, check)
    print(f"{check.passed} passed, {check.failed} failed")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
