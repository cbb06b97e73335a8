"""A key server that hands out one fixed SAK, written with the independent MKA reference
(mka_ref.py) and not with ivnsec's code: the other end of the nonce test of `ivnsec macsec up
--psk` (crates/ivnsec/tests/testbed_ecus/mka.rs). It lets the test do what a real key server may do to a
member that restarts while the CA still uses the old SAK: hand it that same SAK again.

Run inside a network namespace as root. Reads one JSON line on stdin:

    {"iface": "eth0", "mac": "02:..", "cak": HEX, "ckn": HEX, "sak": HEX, "an": 0, "kn": 1}

then, until stdin closes:
- sends an MKPDU (priority 0, key server, the SAK distributed under the KEK, its SAK Use saying
  it transmits and receives with it) every 0.5 s and at once after each MKPDU of a member,
  listing the latest MI and MN of every member it heard (so each member finds itself live);
- captures every MACsec frame (EtherType 0x88E5) on the interface and checks it against the
  SAK with AES-GCM (IV = SCI || PN, AAD = addresses and SecTAG), as a receiver of the CA would.

When stdin closes it prints one JSON line and exits:

    {"frames": [[SCI_HEX, AN, PN, VERIFIED], ...], "mkpdus": N, "bad_mkpdus": N, "mis": [MI_HEX, ...]}

GCM-AES-128 and GCM-AES-256 with confidentiality (offset 0) only: what the test uses.
"""

from __future__ import annotations

import json
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mka_ref as ref  # noqa: E402

from cryptography.exceptions import InvalidTag  # noqa: E402
from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: E402

ETH_P_MACSEC = 0x88E5
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_MULTICAST = 0
HELLO = 0.5


def macsec_frame(f: bytes, aead: AESGCM) -> list | None:
    """[SCI, AN, PN, verified] of a MACsec frame with an SCI in its SecTAG, else None."""
    if len(f) < 14 + 16 + 16 or f[12:14] != struct.pack(">H", ETH_P_MACSEC):
        return None
    tci_an, sl = f[14], f[15] & 0x3F
    if not tci_an & 0x20:
        return None
    pn, sci = f[16:20], f[20:28]
    end = 28 + sl + 16 if sl else len(f)
    ok = True
    try:
        aead.decrypt(sci + pn, f[28:end], f[:28])
    except InvalidTag:
        ok = False
    return [sci.hex(), tci_an & 3, struct.unpack(">I", pn)[0], ok]


def main() -> int:
    cfg = json.loads(sys.stdin.readline())
    cak, ckn, sak = (bytes.fromhex(cfg[k]) for k in ("cak", "ckn", "sak"))
    an, kn, iface = int(cfg["an"]), int(cfg["kn"]), cfg["iface"]
    mac = bytes.fromhex(cfg["mac"].replace(":", ""))
    sci, mi, mn = mac + b"\x00\x01", os.urandom(12), 1
    ick, kek = ref.ick(cak, ckn), ref.kek(cak, ckn)
    suite = None if len(sak) == 16 else ref.SUITES["macsec-gcm-aes-256"][0]
    dsak = (an, 1, kn, suite, ref.wrap(kek, sak))
    aead = AESGCM(sak)

    eapol = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ref.ETHERTYPE))
    eapol.bind((iface, ref.ETHERTYPE))
    mreq = struct.pack("iHH8s", socket.if_nametoindex(iface), PACKET_MR_MULTICAST, 6, ref.GROUP)
    eapol.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
    data = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_MACSEC))
    data.bind((iface, ETH_P_MACSEC))

    members: dict[bytes, tuple[bytes, int]] = {}
    seen_mis: list[str] = []
    frames: list[list] = []
    mkpdus = bad = 0

    def hello() -> None:
        nonlocal mn
        m = ref.Mkpdu(
            priority=0, key_server=True, sci=sci, mi=mi, mn=mn, ckn=ckn,
            live=list(members.values()) or None,
            sak_use=ref.SakUse(lan=an, ltx=True, lrx=True, latest_mi=mi, latest_kn=kn,
                               latest_lpn=1),
            dsak=dsak,
        )
        eapol.send(ref.encode(m, mac, ick))
        mn += 1

    next_hello = 0.0
    while True:
        now = time.monotonic()
        if now >= next_hello:
            hello()
            next_hello = now + HELLO
        r, _, _ = select.select([sys.stdin, eapol, data], [], [], max(0.0, next_hello - now))
        if sys.stdin in r and not sys.stdin.readline():
            break
        if eapol in r:
            f = eapol.recv(4096)
            try:
                m = ref.decode(f, ick)
            except (ref.Malformed, ValueError):
                bad += 1
                continue
            if m.sci == sci:
                continue
            mkpdus += 1
            if m.mi.hex() not in seen_mis:
                seen_mis.append(m.mi.hex())
            members[m.sci] = (m.mi, m.mn)
            hello()
        if data in r:
            got = macsec_frame(data.recv(4096), aead)
            if got is not None and len(frames) < 100_000:
                frames.append(got)
    print(json.dumps({"frames": frames, "mkpdus": mkpdus, "bad_mkpdus": bad, "mis": seen_mis}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
