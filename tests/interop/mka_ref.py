"""Independent reference implementation of the MKA key hierarchy and MKPDU format of IEEE Std
802.1X-2020, written from the standard's text (clauses 6.2.1, 9.3, 9.4.1, 9.8, 11.11) and not
from the Rust sources, so that the cross-check (mka_crosscheck.py) tests our reading of the
standard and not only our code. Crypto from the `cryptography` package (AES-CMAC, AES Key Wrap).

    KDF(K, Label, Context, L) = CMAC(K, [1] | Label | 0x00 | Context | [L]_16) | CMAC(K, [2] | ...)
    ICK = KDF(CAK, "IEEE8021 ICK", CKN[:16] zero-padded, |CAK|)
    KEK = KDF(CAK, "IEEE8021 KEK", CKN[:16] zero-padded, |CAK|)
    SAK = KDF(CAK, "IEEE8021 SAK", KS-nonce | MI list | KN, |SAK|)
    ICV = CMAC(ICK, DA | SA | EtherType | EAPOL header | MKPDU without the ICV)
    Distributed CAK (type 5, Figure 11-13) body = AES-KW(KEK, CAK) | CKN (the wrap 24 octets for a
    128-bit CAK, 40 for a 256-bit one; which one is not encoded, the wrap's check decides)

Run it directly for its self-test against IEEE 802.1X-2020 Annex G and RFC 3394 section 4.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import cmac
from cryptography.hazmat.primitives.ciphers import algorithms
from cryptography.hazmat.primitives.keywrap import aes_key_unwrap, aes_key_wrap

ETHERTYPE = 0x888E
GROUP = bytes.fromhex("0180c2000003")
AGILITY = 0x0080C201
SUITES = {  # profile -> (identifier, SAK length, XPN)
    "macsec-gcm-aes-128": (0x0080C20001000001, 16, False),
    "macsec-gcm-aes-256": (0x0080C20001000002, 32, False),
    "macsec-gcm-aes-xpn-128": (0x0080C20001000003, 16, True),
    "macsec-gcm-aes-xpn-256": (0x0080C20001000004, 32, True),
}


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


def key_context(ckn: bytes) -> bytes:
    return (ckn[:16] + bytes(16))[:16]


def ick(cak: bytes, ckn: bytes) -> bytes:
    return kdf(cak, b"IEEE8021 ICK", key_context(ckn), 8 * len(cak))


def kek(cak: bytes, ckn: bytes) -> bytes:
    return kdf(cak, b"IEEE8021 KEK", key_context(ckn), 8 * len(cak))


def sak(cak: bytes, ks_nonce: bytes, mis: list[bytes], kn: int, length: int) -> bytes:
    return kdf(cak, b"IEEE8021 SAK", ks_nonce + b"".join(mis) + struct.pack(">I", kn), 8 * length)


def salt(ks_mi: bytes, kn: int) -> bytes:
    """XPN salt: the key server's MI, its first four octets XORed with KN[15:0] | KN[31:16]."""
    k = struct.pack(">I", kn)
    x = k[2:4] + k[0:2]
    return bytes(a ^ b for a, b in zip(ks_mi[:4], x)) + ks_mi[4:]


def sscis(scis: list[bytes]) -> dict[bytes, int]:
    """802.1AE 10.7.13: SSCIs 1, 2, ... to the SCIs in descending numerical order."""
    return {s: i + 1 for i, s in enumerate(sorted(scis, reverse=True))}


def pad4(b: bytes) -> bytes:
    return b + bytes(-len(b) % 4)


def pset(t: int, o2: int, o3_high: int, body: bytes, pad: bool = True) -> bytes:
    assert len(body) <= 0xFFF
    hdr = bytes([t, o2, (o3_high & 0xF0) | (len(body) >> 8), len(body) & 0xFF])
    return hdr + (pad4(body) if pad else body)


@dataclass
class SakUse:
    lan: int = 0
    ltx: bool = False
    lrx: bool = False
    oan: int = 0
    otx: bool = False
    orx: bool = False
    latest_mi: bytes = bytes(12)
    latest_kn: int = 0
    latest_lpn: int = 0
    old_mi: bytes = bytes(12)
    old_kn: int = 0
    old_lpn: int = 0


@dataclass
class Mkpdu:
    version: int = 3
    priority: int = 16
    key_server: bool = False
    desired: bool = True
    capability: int = 2
    sci: bytes = bytes(8)
    mi: bytes = bytes(12)
    mn: int = 1
    agility: int = AGILITY
    ckn: bytes = b""
    live: list[tuple[bytes, int]] | None = None
    ks_ssci: int = 0
    potential: list[tuple[bytes, int]] | None = None
    sak_use: SakUse | None = None
    dsak: tuple[int, int, int, int | None, bytes] | None = None  # an, co, kn, suite, wrapped
    xpn: tuple[int, int] | None = None  # latest, old lowest PN high 32 bits
    dcak: bytes | None = None  # Distributed CAK body: AES-KW(KEK, CAK) | CKN
    skipped: list[int] = field(default_factory=list)


def encode(m: Mkpdu, src: bytes, ick_key: bytes, dst: bytes = GROUP) -> bytes:
    basic = m.sci + m.mi + struct.pack(">II", m.mn, m.agility) + m.ckn
    flags = (0x80 if m.key_server else 0) | (0x40 if m.desired else 0) | (m.capability << 4)
    body = pset(m.version, m.priority, flags, basic)
    if m.live is not None:
        body += pset(1, m.ks_ssci, 0, b"".join(mi + struct.pack(">I", mn) for mi, mn in m.live))
    if m.potential is not None:
        body += pset(2, 0, 0, b"".join(mi + struct.pack(">I", mn) for mi, mn in m.potential))
    if m.sak_use is not None:
        u = m.sak_use
        o2 = u.lan << 6 | u.ltx << 5 | u.lrx << 4 | u.oan << 2 | u.otx << 1 | u.orx
        b = u.latest_mi + struct.pack(">II", u.latest_kn, u.latest_lpn)
        b += u.old_mi + struct.pack(">II", u.old_kn, u.old_lpn)
        body += pset(3, o2, 0, b)
    if m.dsak is not None:
        an, co, kn, suite, wrapped = m.dsak
        b = struct.pack(">I", kn) + (struct.pack(">Q", suite) if suite is not None else b"") + wrapped
        body += pset(4, an << 6 | co << 4, 0, b)
    if m.dcak is not None:
        body += pset(5, 0, 0, m.dcak)
    if m.xpn is not None:
        body += pset(8, 0, 0, struct.pack(">II", *m.xpn))
    signed = dst + src + struct.pack(">HBBH", ETHERTYPE, 3, 5, len(body) + 16) + body
    return signed + prf(ick_key, signed)


class Malformed(Exception):
    pass


def decode(frame: bytes, ick_key: bytes) -> Mkpdu:
    """Decodes and verifies one MKPDU frame; raises Malformed (or ValueError on a bad ICV)."""
    if len(frame) < 18 or struct.unpack(">H", frame[12:14])[0] != ETHERTYPE:
        raise Malformed("not EAPOL")
    ver, ptype, blen = struct.unpack(">BBH", frame[14:18])
    if ptype != 5 or blen < 32 or blen % 4 or len(frame) < 18 + blen:
        raise Malformed("EAPOL header")
    signed, icv = frame[: 18 + blen - 16], frame[18 + blen - 16 : 18 + blen]
    if prf(ick_key, signed) != icv:
        raise ValueError("bad ICV")
    p = frame[18 : 18 + blen - 16]
    n = (p[2] & 0x0F) << 8 | p[3]
    if not 29 <= n <= 60:
        raise Malformed("basic parameter set length")
    b = p[4 : 4 + n]
    m = Mkpdu(
        version=p[0], priority=p[1], key_server=bool(p[2] & 0x80), desired=bool(p[2] & 0x40),
        capability=(p[2] >> 4) & 3, sci=b[0:8], mi=b[8:20], mn=struct.unpack(">I", b[20:24])[0],
        agility=struct.unpack(">I", b[24:28])[0], ckn=b[28:],
    )
    off = 4 + n + (-n % 4)
    seen = set()
    while off < len(p):
        t, o2 = p[off], p[off + 1]
        ln = (p[off + 2] & 0x0F) << 8 | p[off + 3]
        body = p[off + 4 : off + 4 + ln]
        if len(body) != ln:
            raise Malformed(f"set {t} runs past the body")
        if t in seen:
            raise Malformed(f"set {t} twice")
        seen.add(t)
        if t in (1, 2):
            if ln % 16:
                raise Malformed("peer list length")
            lst = [(body[i : i + 12], struct.unpack(">I", body[i + 12 : i + 16])[0]) for i in range(0, ln, 16)]
            if t == 1:
                m.live, m.ks_ssci = lst, o2
            else:
                m.potential = lst
        elif t == 3:
            if ln not in (0, 40):
                raise Malformed("SAK use length")
            u = SakUse(lan=o2 >> 6, ltx=bool(o2 & 0x20), lrx=bool(o2 & 0x10), oan=(o2 >> 2) & 3,
                       otx=bool(o2 & 2), orx=bool(o2 & 1))
            if ln:
                u.latest_mi, u.old_mi = body[0:12], body[20:32]
                u.latest_kn, u.latest_lpn = struct.unpack(">II", body[12:20])
                u.old_kn, u.old_lpn = struct.unpack(">II", body[32:40])
            m.sak_use = u
        elif t == 4:
            if ln == 28:
                m.dsak = (o2 >> 6, (o2 >> 4) & 3, struct.unpack(">I", body[:4])[0], None, body[4:])
            elif ln in (36, 52):
                kn, suite = struct.unpack(">IQ", body[:12])
                m.dsak = (o2 >> 6, (o2 >> 4) & 3, kn, suite, body[12:])
            else:
                raise Malformed("distributed SAK length")
        elif t == 5:
            # A wrapped 128-bit CAK (24 octets) or 256-bit CAK (40) and a CKN of 1..32 octets.
            if not 24 + 1 <= ln <= 40 + 32:
                raise Malformed("distributed CAK length")
            m.dcak = body
        elif t == 8:
            if ln != 8:
                raise Malformed("XPN length")
            m.xpn = struct.unpack(">II", body)
        elif t == 255:
            if ln != 16 or off + 4 != len(p):
                raise Malformed("ICV indicator")
        else:
            m.skipped.append(t)
        off += 4 + ln + (-ln % 4)
    return m


def wrap(kek_key: bytes, key: bytes) -> bytes:
    return aes_key_wrap(kek_key, key)


def unwrap(kek_key: bytes, wrapped: bytes) -> bytes:
    return aes_key_unwrap(kek_key, wrapped)


def dcak_body(kek_key: bytes, cak: bytes, ckn: bytes) -> bytes:
    return wrap(kek_key, cak) + ckn


def unwrap_dcak(kek_key: bytes, body: bytes) -> tuple[bytes, bytes]:
    """(CAK, CKN) of a Distributed CAK body; raises ValueError when no reading unwraps."""
    for n in (24, 40):
        if 1 <= len(body) - n <= 32:
            try:
                return unwrap(kek_key, body[:n]), body[n:]
            except Exception:  # InvalidUnwrap: the other reading, or not under this KEK
                pass
    raise ValueError("distributed CAK does not unwrap")


def self_test() -> int:
    """IEEE 802.1X-2020 Annex G and RFC 3394 section 4; returns the number of checks."""
    h = bytes.fromhex
    checks = [
        (kdf(h("1ab9024fa04a03feb9024fa04a03fe11"), b"HI THERE", h("01020104"), 128),
         "b57a0b05f43e9600c3c4d15c1e3c26e8"),
        (kek(h("135bd758b0ee5c11c55ff6ab19fdb199"), h("96437a93ccf10d9dfe347846cce52c7d")),
         "8f5a384c15d6ae9302b462e363d03ca6"),
        (ick(h("135bd758b0ee5c11c55ff6ab19fdb199"), h("96437a93ccf10d9dfe347846cce52c7d")),
         "8f1c5cb1c8ed2e5f047906e0473aad4d"),
        (sak(h("135bd758b0ee5c11c55ff6ab19fdb199"), h("0102030405060708090a0b0c0d0e0f10"),
             [h("cd421cf86ba457938657675b"), h("01020304050607080d1f36cf")], 1, 16),
         "045205925831ae59c14550ed59cc003d"),
        (wrap(h("000102030405060708090A0B0C0D0E0F"), h("00112233445566778899AABBCCDDEEFF")),
         "1fa68b0a8112b447aef34bd8fb5a7b829d3e862371d2cfe5"),
    ]
    for got, want in checks:
        assert got.hex() == want, (got.hex(), want)
    return len(checks)


if __name__ == "__main__":
    print(f"mka_ref: {self_test()} known answers of IEEE 802.1X-2020 Annex G and RFC 3394 passed")
