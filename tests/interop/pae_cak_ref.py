"""Independent reference for the CAK and CKN of an EAP exchange, IEEE Std 802.1X-2020 6.2.2,
written from the standard's text (not from the Rust sources). Crypto from `cryptography`.

    CAK = KDF(Key, "IEEE8021 EAP CAK", mac1 | mac2, CAKlength)
    CKN = KDF(Key, "IEEE8021 EAP CKN", EAP Session-Id | mac1 | mac2, 128)

Key: the first 16 octets of the MSK for a 128-bit CAK, the first 32 for a 256-bit CAK.
mac1/mac2: the lower and the higher of the two MAC addresses. KDF: clause 6.2.1 with AES-CMAC
    KDF(K, Label, Context, L) = CMAC(K, [1] | Label | 0x00 | Context | [L]_16) | CMAC(K, [2] | ...)

Run it to print the vectors pasted into crates/ivnsec-conformance (pae_cak_kat).
"""

from __future__ import annotations

import struct

from cryptography.hazmat.primitives import cmac
from cryptography.hazmat.primitives.ciphers import algorithms


def prf(key: bytes, data: bytes) -> bytes:
    c = cmac.CMAC(algorithms.AES(key))
    c.update(data)
    return c.finalize()


def kdf(key: bytes, label: bytes, context: bytes, bits: int) -> bytes:
    out = b""
    i = 1
    while len(out) * 8 < bits:
        out += prf(key, bytes([i]) + label + b"\x00" + context + struct.pack(">H", bits))
        i += 1
    return out[: bits // 8]


def derive(msk: bytes, session_id: bytes, supplicant: bytes, authenticator: bytes, cak_len: int):
    mac1, mac2 = sorted([supplicant, authenticator])
    key = msk[:cak_len]
    cak = kdf(key, b"IEEE8021 EAP CAK", mac1 + mac2, 8 * cak_len)
    ckn = kdf(key, b"IEEE8021 EAP CKN", session_id + mac1 + mac2, 128)
    return cak, ckn


def main() -> None:
    msk = bytes(range(64))
    session_id = bytes([0x0D]) + bytes([0xC1] * 32) + bytes([0x5E] * 32)
    supplicant = bytes.fromhex("020000000011")
    authenticator = bytes.fromhex("0200000000aa")
    for cak_len in (16, 32):
        cak, ckn = derive(msk, session_id, supplicant, authenticator, cak_len)
        # The order of the two addresses does not matter.
        assert (cak, ckn) == derive(msk, session_id, authenticator, supplicant, cak_len)
        print(f"cak_len={cak_len}")
        print(f"  cak={cak.hex()}")
        print(f"  ckn={ckn.hex()}")


if __name__ == "__main__":
    main()
