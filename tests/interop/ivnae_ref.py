"""Independent reference implementation of IVN-AE version 2 (see docs/wire-ivnae.md).

Written from the specification (issue 2 / docs/wire-ivnae.md), not from the Rust sources, so that
the cross-check (crosscheck.py) tests our reading of the specification and not only our code.
Uses the `cryptography` package for AES, AES-GCM, AES-CCM and ChaCha20-Poly1305, and the standard
library for HMAC, the hashes and CRC-32.

Layout (offsets in bytes):

    0  dst MAC (6) | 6 src MAC (6) | 12 EtherType 0x88B5 (2) | 14 version 2 | 15 suite id
    16 key id | 17 flags (0x01 = conf) | 18 seq (8, big-endian) | 26 body (n) | 26+n tag (t)

A = bytes 0..26; body = inner EtherType (2) || payload.

Nonce (section 3): version 2  N = iv XOR (00 00 00 || key id || seq as u64 big-endian);
                   version 1  N = iv XOR (00000000 || seq as u64 big-endian).
Senders write version 2. A receiver takes version 1 frames only when its SA is configured to
(accept_v1); otherwise they are dropped as bad_version.
"""

from __future__ import annotations

import hashlib
import hmac
import zlib
from dataclasses import dataclass, field

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM, ChaCha20Poly1305

ETHERTYPE = 0x88B5
VERSION = 2
VERSION_1 = 1  # the previous version: same layout, nonce without the key id
FLAG_CONF = 0x01
HEADER_LEN = 26
ETH_HEADER_LEN = 14

# Hash functions of the HMAC suites: name -> (index h, hashlib constructor, digest length).
HASHES = {
    "md5": (0, hashlib.md5, 16),
    "sha1": (1, hashlib.sha1, 20),
    "sha224": (2, hashlib.sha224, 28),
    "sha256": (3, hashlib.sha256, 32),
    "sha3-256": (4, hashlib.sha3_256, 32),
}
AES_SIZES = {128: 0, 192: 1, 256: 2}
MODES = {"cbc": 0, "ctr": 1}


@dataclass(frozen=True)
class Suite:
    name: str
    id: int
    kind: str  # "plain" | "crc32" | "aead" | "hmac" | "etm"
    key_len: int = 0  # cipher key length in bytes (0 = no key)
    aead: str = ""  # "gcm" | "ccm" | "chacha"
    mode: str = ""  # "cbc" | "ctr" (Encrypt-then-MAC suites)
    hash: str = ""  # HMAC hash name

    @property
    def levels(self) -> tuple[str, ...]:
        if self.kind in ("plain", "crc32"):
            return ("none",)
        if self.kind == "aead":
            return ("conf", "auth")
        if self.kind == "hmac":
            return ("auth",)
        return ("conf",)

    @property
    def full_tag_len(self) -> int:
        if self.kind == "plain":
            return 0
        if self.kind == "crc32":
            return 4
        if self.kind == "aead":
            return 16
        return HASHES[self.hash][2]

    @property
    def min_tag_len(self) -> int:
        """HMAC tags may be truncated to max(10, digest/2); other tags are fixed."""
        if self.kind in ("hmac", "etm"):
            return max(10, self.full_tag_len // 2)
        return self.full_tag_len

    @property
    def needs_mac_key(self) -> bool:
        return self.kind in ("hmac", "etm")


def _all_suites() -> list[Suite]:
    s = [Suite("plain", 0x00, "plain"), Suite("crc32", 0x01, "crc32")]
    s += [
        Suite("aes128-gcm", 0x10, "aead", 16, aead="gcm"),
        Suite("aes256-gcm", 0x11, "aead", 32, aead="gcm"),
        Suite("aes128-ccm", 0x12, "aead", 16, aead="ccm"),
        Suite("aes256-ccm", 0x13, "aead", 32, aead="ccm"),
        Suite("chacha20-poly1305", 0x14, "aead", 32, aead="chacha"),
    ]
    for hname, (h, _, _) in HASHES.items():
        s.append(Suite(f"hmac-{hname}", 0x30 + h, "hmac", hash=hname))
    for bits, k in AES_SIZES.items():
        for mname, m in MODES.items():
            for hname, (h, _, _) in HASHES.items():
                s.append(
                    Suite(
                        f"aes{bits}-{mname}-hmac-{hname}",
                        0x40 + 0x10 * k + 0x08 * m + h,
                        "etm",
                        bits // 8,
                        mode=mname,
                        hash=hname,
                    )
                )
    return s


SUITES: list[Suite] = _all_suites()
SUITE_BY_NAME = {s.name: s for s in SUITES}
SUITE_BY_ID = {s.id: s for s in SUITES}
assert len(SUITES) == 42 and len(SUITE_BY_ID) == 42


def parse_profile(name: str) -> tuple[Suite, str]:
    """'aes128-gcm/auth' -> (suite, 'auth'); AEAD suites default to conf."""
    base, _, level = name.partition("/")
    suite = SUITE_BY_NAME[base]
    if not level:
        level = suite.levels[0]
    if level not in suite.levels:
        raise ValueError(f"{base} has no level {level}")
    return suite, level


def all_profiles() -> list[str]:
    out = []
    for s in SUITES:
        if s.kind == "aead":
            out += [f"{s.name}/conf", f"{s.name}/auth"]
        else:
            out.append(s.name)
    return out


class Drop(Exception):
    """A received frame was dropped; `reason` uses the drop-reason names of docs/wire-ivnae.md."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class ReplayWindow:
    """W = 0 accepts only seq > highest; otherwise seq > highest, or highest - W < seq <= highest
    when not seen before (RFC 4303 section 3.4.3). check() before the tag, mark() after it."""

    def __init__(self, w: int):
        self.w = w
        self.highest = 0
        self.seen: set[int] = set()

    def check(self, seq: int) -> None:
        if seq > self.highest:
            return
        if self.w == 0:
            # seq == highest is a repeat of the last accepted frame.
            raise Drop("replay_duplicate" if seq == self.highest else "replay_too_old")
        if seq <= self.highest - self.w:
            raise Drop("replay_too_old")
        if seq in self.seen:
            raise Drop("replay_duplicate")

    def mark(self, seq: int) -> None:
        self.seen.add(seq)
        if seq > self.highest:
            self.highest = seq
        # forget what fell out of the window
        low = self.highest - self.w
        self.seen = {s for s in self.seen if s > low}


def _aes_ecb_block(key: bytes, block: bytes) -> bytes:
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return enc.update(block) + enc.finalize()


def _ctr_keystream_xor(key: bytes, nonce: bytes, data: bytes) -> bytes:
    """AES-CTR, initial counter block N || 00000001, whole 128-bit block incremented big-endian.
    Done block by block over AES-ECB so the counter rule is explicit here."""
    counter = int.from_bytes(nonce + b"\x00\x00\x00\x01", "big")
    out = bytearray()
    ecb = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    for i in range(0, len(data), 16):
        ks = ecb.update(counter.to_bytes(16, "big"))
        counter = (counter + 1) % (1 << 128)
        chunk = data[i : i + 16]
        out += bytes(a ^ b for a, b in zip(chunk, ks))
    return bytes(out)


@dataclass
class Sa:
    """One direction of an IVN-AE security association."""

    profile: str
    key: bytes = b""
    mac_key: bytes = b""
    iv: bytes = bytes(12)
    key_id: int = 0
    tag_len: int | None = None  # HMAC truncation; None = full
    replay_window: int = 64
    accept_v1: bool = False  # receive: also take version 1 frames (v1 nonce)
    version: int = VERSION  # transmit: the version written (1 only to model old senders)
    suite: Suite = field(init=False)
    level: str = field(init=False)
    replay: ReplayWindow = field(init=False)

    def __post_init__(self) -> None:
        self.suite, self.level = parse_profile(self.profile)
        s = self.suite
        if s.key_len and len(self.key) != s.key_len:
            raise ValueError(f"{s.name}: key must be {s.key_len} bytes")
        if not s.key_len and self.key:
            raise ValueError(f"{s.name}: takes no cipher key")
        if s.needs_mac_key and len(self.mac_key) < 1:
            raise ValueError(f"{s.name}: needs an HMAC key of at least 1 byte")
        if len(self.iv) != 12:
            raise ValueError("iv must be 12 bytes")
        if not (0 <= self.key_id <= 255):
            raise ValueError("key id must be 0..255")
        if self.version not in (VERSION, VERSION_1):
            raise ValueError("version must be 1 or 2")
        if self.tag_len is None:
            self.tag_len = s.full_tag_len
        if not (s.min_tag_len <= self.tag_len <= s.full_tag_len):
            raise ValueError(f"{s.name}: tag length {self.tag_len} outside {s.min_tag_len}..{s.full_tag_len}")
        self.replay = ReplayWindow(self.replay_window)

    # --- building blocks -------------------------------------------------------------------

    def nonce(self, seq: int, version: int = VERSION) -> bytes:
        """Version 2: N = iv XOR (00 00 00 || key id || seq as u64 big-endian).
        Version 1: N = iv XOR (00000000 || seq as u64 big-endian)."""
        kid = self.key_id if version == VERSION else 0
        s = bytes(3) + bytes([kid]) + seq.to_bytes(8, "big")
        return bytes(a ^ b for a, b in zip(self.iv, s))

    def header(self, dst_src: bytes, seq: int) -> bytes:
        flags = FLAG_CONF if self.level == "conf" else 0
        return (
            dst_src
            + ETHERTYPE.to_bytes(2, "big")
            + bytes([self.version, self.suite.id, self.key_id, flags])
            + seq.to_bytes(8, "big")
        )

    def _aead(self):
        a = self.suite.aead
        if a == "gcm":
            return AESGCM(self.key)
        if a == "ccm":
            return AESCCM(self.key, tag_length=16)
        return ChaCha20Poly1305(self.key)

    def _hmac(self, data: bytes) -> bytes:
        ctor = HASHES[self.suite.hash][1]
        return hmac.new(self.mac_key, data, ctor).digest()[: self.tag_len]

    def _cbc_iv(self, n: bytes) -> bytes:
        return _aes_ecb_block(self.key, n + b"\x00\x00\x00\x00")

    def wire_body_len(self, body_len: int) -> int:
        if self.suite.kind == "etm" and self.suite.mode == "cbc":
            return (body_len // 16 + 1) * 16
        return body_len

    # --- transmit --------------------------------------------------------------------------

    def protect(self, plain: bytes, seq: int) -> bytes:
        """plain = dst || src || EtherType || payload  ->  IVN-AE frame with sequence number seq."""
        if len(plain) < ETH_HEADER_LEN:
            raise ValueError("plain frame shorter than 14 bytes")
        if not (1 <= seq < 1 << 64):
            raise ValueError("seq must be in 1..2^64-1")
        a = self.header(plain[:12], seq)
        body = plain[12:]
        n = self.nonce(seq, self.version)
        s = self.suite
        if s.kind == "plain":
            return a + body
        if s.kind == "crc32":
            return a + body + (zlib.crc32(a + body) & 0xFFFFFFFF).to_bytes(4, "big")
        if s.kind == "aead":
            if self.level == "conf":
                ct_tag = self._aead().encrypt(n, body, a)
                return a + ct_tag
            tag = self._aead().encrypt(n, b"", a + body)
            return a + body + tag
        if s.kind == "hmac":
            return a + body + self._hmac(a + body)
        # Encrypt-then-MAC
        if s.mode == "cbc":
            pad = 16 - len(body) % 16
            padded = body + bytes([pad]) * pad
            enc = Cipher(algorithms.AES(self.key), modes.CBC(self._cbc_iv(n))).encryptor()
            c = enc.update(padded) + enc.finalize()
        else:
            c = _ctr_keystream_xor(self.key, n, body)
        return a + c + self._hmac(a + c)

    # --- receive ---------------------------------------------------------------------------

    def verify(self, frame: bytes) -> bytes:
        """Returns the plain frame, or raises Drop(reason). Updates the replay state.

        Order: parse -> key id -> version -> replay check -> tag check -> mark -> decrypt ->
        padding."""
        s = self.suite
        if len(frame) < HEADER_LEN:
            raise Drop("truncated")
        if int.from_bytes(frame[12:14], "big") != ETHERTYPE:
            raise Drop("wrong_ethertype")
        version = frame[14]
        if version not in (VERSION, VERSION_1):
            raise Drop("bad_version")
        flags = frame[17]
        if flags & ~FLAG_CONF & 0xFF:
            raise Drop("reserved_bits")
        if frame[16] != self.key_id:
            raise Drop("unknown_sa")
        if version == VERSION_1 and not self.accept_v1:
            raise Drop("bad_version")
        if frame[15] != s.id:
            raise Drop("suite_mismatch" if frame[15] in SUITE_BY_ID else "unknown_suite")
        if bool(flags & FLAG_CONF) != (self.level == "conf"):
            raise Drop("level_mismatch")
        seq = int.from_bytes(frame[18:26], "big")
        if seq == 0:
            raise Drop("bad_seq")
        t = self.tag_len
        # The body holds at least the inner EtherType; CBC bodies are whole, non-empty blocks.
        if len(frame) < HEADER_LEN + t:
            raise Drop("truncated")
        a = frame[:HEADER_LEN]
        body = frame[HEADER_LEN : len(frame) - t]
        tag = frame[len(frame) - t :]
        if len(body) < 2:
            raise Drop("truncated")
        if s.kind == "etm" and s.mode == "cbc" and len(body) % 16:
            raise Drop("bad_length")
        self.replay.check(seq)
        n = self.nonce(seq, version)
        if s.kind == "plain":
            plain_body = body
        elif s.kind == "crc32":
            want = (zlib.crc32(a + body) & 0xFFFFFFFF).to_bytes(4, "big")
            if not hmac.compare_digest(want, tag):
                raise Drop("bad_tag")
            plain_body = body
        elif s.kind == "aead":
            try:
                if self.level == "conf":
                    plain_body = self._aead().decrypt(n, body + tag, a)
                else:
                    self._aead().decrypt(n, tag, a + body)
                    plain_body = body
            except Exception:
                raise Drop("bad_tag") from None
        elif s.kind == "hmac":
            if not hmac.compare_digest(self._hmac(a + body), tag):
                raise Drop("bad_tag")
            plain_body = body
        else:
            if not hmac.compare_digest(self._hmac(a + body), tag):
                raise Drop("bad_tag")
            plain_body = None
        self.replay.mark(seq)
        if plain_body is None:
            if s.mode == "cbc":
                dec = Cipher(algorithms.AES(self.key), modes.CBC(self._cbc_iv(n))).decryptor()
                padded = dec.update(body) + dec.finalize()
                pad = padded[-1]
                if not (1 <= pad <= 16) or padded[-pad:] != bytes([pad]) * pad:
                    raise Drop("bad_padding")
                plain_body = padded[:-pad]
                if len(plain_body) < 2:
                    raise Drop("bad_padding")
            else:
                plain_body = _ctr_keystream_xor(self.key, n, body)
        return frame[:12] + plain_body


def protect(profile: str, plain: bytes, seq: int, **kw) -> bytes:
    return Sa(profile, **kw).protect(plain, seq)


if __name__ == "__main__":
    # Tiny self-test: every profile round-trips and rejects a flipped tag bit.
    import os

    for p in all_profiles():
        suite, _ = parse_profile(p)
        kw = {"key": os.urandom(suite.key_len)}
        if suite.needs_mac_key:
            kw["mac_key"] = os.urandom(64)
        tx, rx = Sa(p, **kw), Sa(p, **kw)
        plain = os.urandom(12) + b"\x08\x00" + os.urandom(37)
        f = tx.protect(plain, 5)
        assert rx.verify(f) == plain, p
        if suite.kind != "plain":
            bad = bytearray(f)
            bad[-1] ^= 1
            try:
                Sa(p, **kw).verify(bytes(bad))
                raise AssertionError(f"{p}: tampered frame accepted")
            except Drop:
                pass
    # The key id is part of the version 2 nonce: key ids 1 and 2 under one key, IV and sequence
    # number give different ciphertext; version 1 frames need accept_v1.
    key = bytes(range(16))
    plain = bytes(12) + b"\x08\x00" + bytes(40)
    f1 = Sa("aes128-gcm", key=key, key_id=1).protect(plain, 7)
    f2 = Sa("aes128-gcm", key=key, key_id=2).protect(plain, 7)
    assert f1[26:] != f2[26:]
    old = Sa("aes128-gcm", key=key, key_id=1, version=VERSION_1).protect(plain, 7)
    assert old[14] == 1 and old[26:] != f1[26:]
    assert Sa("aes128-gcm", key=key, key_id=1, accept_v1=True).verify(old) == plain
    try:
        Sa("aes128-gcm", key=key, key_id=1).verify(old)
        raise AssertionError("version 1 frame accepted without accept_v1")
    except Drop as e:
        assert e.reason == "bad_version"
    print(f"ivnae_ref self-test: {len(all_profiles())} profiles ok")
