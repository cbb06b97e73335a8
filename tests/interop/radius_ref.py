#!/usr/bin/env python3
"""Independent RADIUS reference (standard library only: hashlib, hmac) for the known-answer
tests of crates/ivnsec-node/src/dot1x/radius/tests.rs.

Prints, as hex:
  request    an Access-Request laid out as RadiusClient builds it, with its Message-Authenticator
             (RFC 3579 §3.2: HMAC-MD5(secret, packet with the MA value zeroed))
  challenge  an Access-Challenge answering it: State, two EAP-Message attributes,
             Message-Authenticator (computed with the Request Authenticator in place) and the
             Response Authenticator (RFC 2865 §3)
  accept     an Access-Accept with MS-MPPE-Recv-Key and -Send-Key encrypted as RFC 2548 §2.4.2
             says, EAP-Success, EAP-Key-Name and Session-Timeout
  msk        the 64 octets Recv-Key ‖ Send-Key those carry

Run: python3 tests/interop/radius_ref.py
"""
import hashlib
import hmac
import struct

SECRET = b"ivnsec-testing-123"
REQ_AUTH = bytes(range(0x10, 0x20))
ID = 0x2A


def attr(t, v):
    return bytes([t, len(v) + 2]) + v


def vsa(vendor, vt, v):
    return attr(26, struct.pack(">I", vendor) + bytes([vt, len(v) + 2]) + v)


def u32(v):
    return struct.pack(">I", v)


def finish(code, ident, auth, attrs):
    return bytes([code, ident]) + struct.pack(">H", 20 + len(attrs)) + auth + attrs


def with_ma(code, ident, auth, attrs):
    """attrs ends with no MA; appends one and fills it in."""
    attrs = attrs + attr(80, bytes(16))
    pkt = finish(code, ident, auth, attrs)
    ma = hmac.new(SECRET, pkt, hashlib.md5).digest()
    return pkt[:-16] + ma


def respond(code, attrs, ma=True):
    if ma:
        pkt = with_ma(code, ID, REQ_AUTH, attrs)
    else:
        pkt = finish(code, ID, REQ_AUTH, attrs)
    ra = hashlib.md5(pkt + SECRET).digest()
    return pkt[:4] + ra + pkt[20:]


def mppe(key, salt):
    p = bytes([len(key)]) + key
    p += bytes(-len(p) % 16)
    out = salt
    prev = REQ_AUTH + salt
    for i in range(0, len(p), 16):
        b = hashlib.md5(SECRET + prev).digest()
        c = bytes(x ^ y for x, y in zip(p[i:i + 16], b))
        out += c
        prev = c
    return out


eap_identity = b"\x02\x01\x00\x09\x01ecu1"
request = with_ma(1, ID, REQ_AUTH,
                  attr(1, b"ecu1") + attr(32, b"gw0") + attr(6, u32(2)) + attr(61, u32(15))
                  + attr(12, u32(1400)) + attr(30, b"02-00-00-00-00-01")
                  + attr(31, b"02-00-00-00-00-02") + attr(79, eap_identity))

eap_req = b"\x01\x02" + struct.pack(">H", 300) + b"\x0d\x20" + bytes(i % 251 for i in range(294))
challenge = respond(11, attr(24, b"state-0123") + attr(79, eap_req[:253]) + attr(79, eap_req[253:]))

msk = hashlib.sha512(b"ivnsec radius msk").digest()
recv, send = msk[:32], msk[32:]
accept = respond(2, vsa(311, 17, mppe(recv, b"\x80\x01")) + vsa(311, 16, mppe(send, b"\x80\x02"))
                 + attr(79, b"\x03\x02\x00\x04") + attr(102, b"\x0d" + bytes(64)) + attr(27, u32(3600)))

for name, v in [("request", request), ("challenge", challenge), ("accept", accept), ("msk", msk)]:
    print(f"{name} {v.hex()}")
