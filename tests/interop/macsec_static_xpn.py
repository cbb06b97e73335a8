#!/usr/bin/env python3
"""Independent check of `ivnsec macsec up --keys` under a GCM-AES-XPN suite: every captured
MACsec frame must verify under the key file's key with the nonce (SSCI || PN) XOR salt, where the
SSCI is computed here from the frame's SCI with the function docs/macsec-tap.md documents
("Static XPN SSCIs") and nothing of ivnsec's:

    SSCI = 0x80000000 | first 4 octets of HMAC-SHA256(b"ivnsec macsec static ssci v1", SCI)

Reads one JSON object on stdin: {"key": HEX, "salt": HEX, "frames": [HEX, ...]} (whole Ethernet
frames with the SCI in the SecTAG, confidentiality offset 0, PNs below 2^32). Prints one JSON
line: {"verified": N, "failed": [[SCI_HEX, PN], ...], "sscis": {SCI_HEX: SSCI}}; exit 0.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
import sys

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

LABEL = b"ivnsec macsec static ssci v1"


def static_ssci(sci: bytes) -> int:
    return 0x80000000 | int.from_bytes(hmac.new(LABEL, sci, hashlib.sha256).digest()[:4], "big")


def main() -> int:
    cfg = json.loads(sys.stdin.read())
    aead = AESGCM(bytes.fromhex(cfg["key"]))
    salt = bytes.fromhex(cfg["salt"])
    verified, failed, sscis = 0, [], {}
    for h in cfg["frames"]:
        f = bytes.fromhex(h)
        tci_an, sl = f[14], f[15] & 0x3F
        if f[12:14] != b"\x88\xe5" or not tci_an & 0x20:
            failed.append([f[:14].hex(), -1])
            continue
        pn, sci = struct.unpack(">I", f[16:20])[0], f[20:28]
        ssci = static_ssci(sci)
        sscis[sci.hex()] = ssci
        iv = bytes(a ^ b for a, b in zip(struct.pack(">IQ", ssci, pn), salt))
        end = 28 + sl + 16 if sl else len(f)
        try:
            aead.decrypt(iv, f[28:end], f[:28])
            verified += 1
        except InvalidTag:
            failed.append([sci.hex(), pn])
    print(json.dumps({"verified": verified, "failed": failed, "sscis": sscis}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
