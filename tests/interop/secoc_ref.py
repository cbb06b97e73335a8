"""Independent reference implementation of AUTOSAR SecOC as ivnsec specifies it (issue 5,
docs/secoc.md), written from that text and not from the Rust sources, so that the cross-check
(secoc_crosscheck.py) tests our reading of the specification and not only our code.

The MACs come from the `cryptography` package (CMAC with AES-128, HMAC with SHA-256). The bit
packing works on Python integers (the authentication information is one big number), unlike the
Rust code, which moves single bits.

    Secured I-PDU = Authentic I-PDU || truncated FV (fv_bits LSBs of the full FV)
                    || truncated authenticator (mac_bits MSBs of the MAC) || zero bits to a byte
    MAC input     = DataID (2 bytes, big-endian) || Authentic I-PDU
                    || full FV (big-endian, ceil(full_fv_bits / 8) bytes)

Receiver (the freshness value manager's counter model):
  1. a PDU shorter than the authentication information: `truncated`; non-zero padding bits:
     `reserved_bits`;
  2. full FV = (upper part of the last accepted FV) || received bits when the received bits are
     greater than the last FV's low bits, else (upper part + 1) || received bits; with
     fv_bits == full_fv_bits the received value is the full FV. Equal to the last:
     `replay_duplicate`; below it, or above the largest FV: `replay_too_old`;
  3. more than the acceptance window W ahead of the last accepted FV: `freshness_window`;
  4. MAC check with the FV; on failure and while attempts remain, the FV + k * 2**fv_bits
     (k = 1, 2, ...) while it stays within the window: `bad_tag` when none matches;
  5. on success the FV becomes the last accepted one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cryptography.hazmat.primitives import cmac, hashes, hmac
from cryptography.hazmat.primitives.ciphers import algorithms

PROFILES = {
    # name: (MAC output bits, fixed key length or None)
    "secoc-cmac-aes128": (128, 16),
    "secoc-hmac-sha256": (256, None),
}


class Drop(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def mac(profile: str, key: bytes, data: bytes) -> bytes:
    if profile == "secoc-cmac-aes128":
        c = cmac.CMAC(algorithms.AES(key))
        c.update(data)
        return c.finalize()
    if profile == "secoc-hmac-sha256":
        h = hmac.HMAC(key, hashes.SHA256())
        h.update(data)
        return h.finalize()
    raise ValueError(profile)


@dataclass
class Config:
    profile: str
    key: bytes
    data_id: int
    fv_bits: int = 8
    mac_bits: int = 24
    full_fv_bits: int = 64

    def __post_init__(self) -> None:
        out_bits, key_len = PROFILES[self.profile]
        if key_len is not None and len(self.key) != key_len:
            raise ValueError("key length")
        if key_len is None and not self.key:
            raise ValueError("empty key")
        if not 1 <= self.full_fv_bits <= 64:
            raise ValueError("full_fv_bits")
        if not 0 <= self.fv_bits <= self.full_fv_bits:
            raise ValueError("fv_bits")
        if not 1 <= self.mac_bits <= out_bits:
            raise ValueError("mac_bits")
        if not 0 <= self.data_id <= 0xFFFF:
            raise ValueError("data_id")

    @property
    def max_fv(self) -> int:
        return (1 << self.full_fv_bits) - 1

    @property
    def info_len(self) -> int:
        return (self.fv_bits + self.mac_bits + 7) // 8

    def authenticator(self, pdu: bytes, fv: int) -> int:
        """The mac_bits most significant bits of the MAC, as an integer."""
        fv_bytes = fv.to_bytes((self.full_fv_bits + 7) // 8, "big")
        m = mac(self.profile, self.key, self.data_id.to_bytes(2, "big") + pdu + fv_bytes)
        return int.from_bytes(m, "big") >> (8 * len(m) - self.mac_bits)

    def secure(self, pdu: bytes, fv: int) -> bytes:
        assert 0 <= fv <= self.max_fv
        trunc_fv = fv & ((1 << self.fv_bits) - 1)
        value = (trunc_fv << self.mac_bits) | self.authenticator(pdu, fv)
        pad = 8 * self.info_len - self.fv_bits - self.mac_bits
        return pdu + (value << pad).to_bytes(self.info_len, "big")

    def split(self, secured: bytes) -> tuple[bytes, int, int]:
        """(Authentic I-PDU, truncated FV, truncated authenticator), or Drop."""
        n = self.info_len
        if len(secured) < n:
            raise Drop("truncated")
        value = int.from_bytes(secured[len(secured) - n :], "big")
        pad = 8 * n - self.fv_bits - self.mac_bits
        if value & ((1 << pad) - 1):
            raise Drop("reserved_bits")
        value >>= pad
        tag = value & ((1 << self.mac_bits) - 1)
        trunc_fv = value >> self.mac_bits
        return secured[: len(secured) - n], trunc_fv, tag


class Sender:
    """The sender's monotonic freshness counter: never wraps."""

    def __init__(self, cfg: Config, first_fv: int):
        if not 1 <= first_fv <= cfg.max_fv:
            raise ValueError("first freshness value")
        self.cfg = cfg
        self.next_fv: int | None = first_fv

    def protect(self, pdu: bytes) -> bytes:
        if self.next_fv is None:
            raise Drop("exhausted")
        fv = self.next_fv
        self.next_fv = fv + 1 if fv < self.cfg.max_fv else None
        return self.cfg.secure(pdu, fv)


@dataclass
class Receiver:
    cfg: Config
    last: int = 0
    window: int | None = None  # None: 2**fv_bits
    attempts: int = 0
    counters: dict[str, int] = field(default_factory=dict)
    rolled_over: bool = False

    def full_fv(self, received: int) -> int:
        """The freshness value the received truncated bits stand for (step 2), or Drop."""
        c = self.cfg
        if c.fv_bits == c.full_fv_bits:
            if received == self.last:
                raise Drop("replay_duplicate")
            if received < self.last:
                raise Drop("replay_too_old")
            return received
        n = c.fv_bits
        upper = self.last >> n
        low = self.last & ((1 << n) - 1)
        if received > low:
            fv = upper << n | received
        else:
            fv = (upper + 1) << n | received
            self.rolled_over = True
        if fv > c.max_fv:
            raise Drop("replay_too_old")
        return fv

    def verify(self, secured: bytes) -> tuple[bytes, int]:
        """(Authentic I-PDU, full FV) or Drop; counts the outcome."""
        try:
            r = self._verify(secured)
        except Drop as e:
            self.counters[e.reason] = self.counters.get(e.reason, 0) + 1
            raise
        self.counters["ok"] = self.counters.get("ok", 0) + 1
        return r

    def _verify(self, secured: bytes) -> tuple[bytes, int]:
        c = self.cfg
        self.rolled_over = False
        pdu, trunc_fv, tag = c.split(secured)
        fv = self.full_fv(trunc_fv)
        w = self.window if self.window is not None else 2**c.fv_bits
        highest = min(self.last + w, c.max_fv)
        if fv > highest:
            raise Drop("freshness_window")
        for k in range(self.attempts + 1):
            if fv > highest:
                break
            if c.authenticator(pdu, fv) == tag:
                self.last = fv
                if self.rolled_over:
                    self.counters["ok_after_rollover"] = self.counters.get("ok_after_rollover", 0) + 1
                if k:
                    self.counters["ok_on_a_later_attempt"] = self.counters.get("ok_on_a_later_attempt", 0) + 1
                return pdu, fv
            fv += 2**c.fv_bits
        raise Drop("bad_tag")


def selftest() -> None:
    """Published MACs split into DataID || PDU || FV (RFC 4493 example 2, RFC 4231 case 2)."""
    m = bytes.fromhex("6bc1bee22e409f96e93d7e117393172a")
    cfg = Config("secoc-cmac-aes128", bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c"), 0x6BC1, 32, 128, 32)
    s = cfg.secure(m[2:12], 0x7393172A)
    assert s[10:].hex() == "7393172a" "070a16b46b4d4144f79bdd9dd04a287c", s.hex()
    cfg = Config("secoc-hmac-sha256", b"Jefe", 0x7768, 5, 13, 31)
    s = cfg.secure(b"at do ya want for noth", 0x696E673F)
    assert s[-3:].hex() == "fadec0", s.hex()


if __name__ == "__main__":
    selftest()
    print("secoc_ref: self-test passed")
