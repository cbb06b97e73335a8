#!/usr/bin/env python3
"""Independent RADIUS reference (Python standard library only: hashlib, hmac), written from
RFC 2865 3 (Response Authenticator), RFC 3579 3.2 (Message-Authenticator) and RFC 2548 2.4.2
(MS-MPPE key encryption). Prints the vectors crates/ivnsec-node/src/dot1x/radius/tests.rs
checks; run it to see them again: python3 tests/interop/radius_ref.py"""
import hashlib
import hmac

secret = b"testing123-ivnsec"
req_auth = bytes(range(0x10, 0x20))


def mppe_encrypt(key, salt):
    p = bytes([len(key)]) + key
    p += b"\0" * (-len(p) % 16)
    out, prev = salt, None
    for i in range(0, len(p), 16):
        b = hashlib.md5(secret + (req_auth + salt if prev is None else prev)).digest()
        c = bytes(x ^ y for x, y in zip(p[i:i + 16], b))
        out += c
        prev = c
    return out


recv = bytes(range(0x40, 0x60))
send = bytes(range(0x60, 0x80))
recv_attr = mppe_encrypt(recv, b"\x80\x01")
send_attr = mppe_encrypt(send, b"\x80\x02")
print("recv_key_attr", recv_attr.hex())
print("send_key_attr", send_attr.hex())


def attr(t, v):
    return bytes([t, len(v) + 2]) + v


def vsa(t, v):
    return attr(26, (311).to_bytes(4, "big") + attr(t, v))


# An Access-Accept answering identifier 42: EAP-Success, the MPPE keys, a Message-Authenticator.
attrs = attr(79, bytes([3, 9, 0, 4])) + vsa(17, recv_attr) + vsa(16, send_attr)
ma_off = 20 + len(attrs) + 2
attrs += attr(80, b"\0" * 16)
length = 20 + len(attrs)
hdr = bytes([2, 42]) + length.to_bytes(2, "big")
ma = hmac.new(secret, hdr + req_auth + attrs, hashlib.md5).digest()
attrs = attrs[: ma_off - 20] + ma + attrs[ma_off - 20 + 16:]
resp_auth = hashlib.md5(hdr + req_auth + attrs + secret).digest()
print("accept", (hdr + resp_auth + attrs).hex())
