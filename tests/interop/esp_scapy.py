#!/usr/bin/env python3
"""IPsec ESP interoperability: ivnsec against scapy and tshark.

Usage: esp_scapy.py IVNSEC_BINARY [--seed N] [--count N]

1. scapy (scapy.layers.ipsec.SecurityAssociation), randomized packets, every profile, transport
   and tunnel mode (IPv4 and IPv6 outer), IPv4 and IPv6 inner, with and without ESN:
   - ivnsec protects -> scapy decrypts and verifies the ICV -> the original packet;
   - scapy protects the same packet with the same sequence number and IV -> byte-identical to
     ivnsec's (transport mode, and tunnel mode with the same outer header);
   - scapy protects -> ivnsec verifies -> the original packet.
2. tshark decrypts ivnsec's packets (Ethernet + IP + ESP in a pcap) with the same keys and shows
   the ICV as correct, for every profile Wireshark's ESP dissector implements.

Prints one line per failure, then "N passed, M failed"; exits 1 when anything failed.
"""

import os
import random
import subprocess
import sys
import tempfile

from scapy.all import IP, IPv6, TCP, UDP, Ether, Raw, raw, wrpcap  # noqa: E402
from scapy.layers.ipsec import ESP, SecurityAssociation  # noqa: E402

# profile -> (scapy crypt_algo, key length incl. salt, scapy auth_algo or None, IV length,
#             Wireshark encryption algorithm or None, Wireshark authentication algorithm)
PROFILES = {
    "esp-aes128-gcm": ("AES-GCM", 20, None, 8, "AES-GCM with 16 octet ICV [RFC4106]", "NULL"),
    "esp-aes256-gcm": ("AES-GCM", 36, None, 8, "AES-GCM with 16 octet ICV [RFC4106]", "NULL"),
    "esp-aes128-gmac": ("AES-NULL-GMAC", 20, None, 8, None, None),
    "esp-aes256-gmac": ("AES-NULL-GMAC", 36, None, 8, None, None),
    "esp-null-hmac-sha256": ("NULL", 0, "SHA2-256-128", 0, "NULL", "HMAC-SHA-256-128 [RFC4868]"),
    "esp-aes128-cbc-hmac-sha256": ("AES-CBC", 16, "SHA2-256-128", 16, "AES-CBC [RFC3602]", "HMAC-SHA-256-128 [RFC4868]"),
    "esp-aes256-cbc-hmac-sha256": ("AES-CBC", 32, "SHA2-256-128", 16, "AES-CBC [RFC3602]", "HMAC-SHA-256-128 [RFC4868]"),
    "esp-chacha20-poly1305": ("CHACHA20-POLY1305", 36, None, 8, None, None),
}

V4 = ("192.0.2.1", "192.0.2.2")
V6 = ("2001:db8::1", "2001:db8::2")
T4 = ("198.51.100.1", "198.51.100.2")
T6 = ("2001:db8:ffff::1", "2001:db8:ffff::2")

passed = 0
failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {what}", flush=True)
    return ok


def run(binary, args, stdin=None):
    p = subprocess.run([binary] + args, input=stdin, capture_output=True, text=True)
    return p.returncode, p.stdout.strip(), p.stderr.strip()


def random_packet(rng, version, ports=(1, 65536)):
    """A random UDP or TCP packet. `ports` bounds the port numbers: the tshark checks use the
    dynamic range (RFC 6335), because a well-known port makes tshark dissect the payload as that
    protocol, and a dissector that gives up on random bytes also hides the ESP trailer fields."""
    size = rng.choice([0, 1, 2, 3, 5, 13, 14, 15, 16, 17, 31, 64, rng.randrange(0, 1200)])
    payload = Raw(bytes(rng.randrange(256) for _ in range(size)))
    port = lambda: rng.randrange(*ports)
    l4 = UDP(sport=port(), dport=port()) if rng.random() < 0.6 else \
        TCP(sport=port(), dport=port(), seq=rng.randrange(2**32), flags="PA")
    tos = rng.randrange(256)
    if version == 4:
        p = IP(src=V4[0], dst=V4[1], tos=tos, id=rng.randrange(65536), ttl=rng.randrange(1, 256)) / l4 / payload
    else:
        p = IPv6(src=V6[0], dst=V6[1], tc=tos, fl=rng.randrange(2**20), hlim=rng.randrange(1, 256)) / l4 / payload
    pkt = p.__class__(raw(p))
    return pkt, tos


def sa_args(profile, key, auth_key, spi, esn):
    a = ["--profile", profile, "--spi", str(spi)]
    if key:
        a += ["--key", key.hex()]
    if auth_key:
        a += ["--auth-key", auth_key.hex()]
    if esn:
        a += ["--esn"]
    return a


def scapy_sa(profile, key, auth_key, spi, tunnel, esn_high, esn):
    crypt, _, auth, _, _, _ = PROFILES[profile]
    kw = dict(crypt_algo=crypt, crypt_key=key if key else None, auth_algo=auth or "NULL",
              auth_key=auth_key if auth_key else None)
    if tunnel is not None:
        kw["tunnel_header"] = tunnel
    if esn:
        kw["esn_en"] = True
        kw["esn"] = esn_high
    return SecurityAssociation(ESP, spi=spi, **kw)


def scapy_checks(binary, rng, count):
    for profile, (crypt, klen, auth, ivlen, _, _) in PROFILES.items():
        for mode in ["transport", "tunnel4", "tunnel6"]:
            for inner_v in [4, 6]:
                for esn in [False, True]:
                    for _ in range(count):
                        one_scapy_case(binary, rng, profile, klen, auth, ivlen, mode, inner_v, esn)


def one_scapy_case(binary, rng, profile, klen, auth, ivlen, mode, inner_v, esn):
    key = bytes(rng.randrange(256) for _ in range(klen))
    auth_key = bytes(rng.randrange(256) for _ in range(32)) if auth else b""
    spi = rng.randrange(256, 2**32)
    # ivnsec -> scapy: a sequence number above 2^32 exercises the ESN high half.
    seq = rng.randrange(1, 2**40) if esn else rng.randrange(1, 2**32)
    low, high = seq & 0xFFFFFFFF, seq >> 32
    if low == 0:
        low, seq = 1, seq | 1
    pkt, tos = random_packet(rng, inner_v)
    iv = bytes(rng.randrange(256) for _ in range(ivlen))
    name = f"{profile} {mode} inner=v{inner_v} esn={esn} len={len(raw(pkt))}"

    args = ["frame", "protect"] + sa_args(profile, key, auth_key, spi, esn) + ["--seq", str(seq)]
    if ivlen:
        args += ["--iv", iv.hex()]
    tunnel_hdr = None
    if mode != "transport":
        src, dst = T4 if mode == "tunnel4" else T6
        args += ["--mode", "tunnel", "--tunnel-src", src, "--tunnel-dst", dst]
        # The outer header ivnsec writes: TOS/traffic class copied, id 0, TTL/hop limit 64.
        if mode == "tunnel4":
            tunnel_hdr = IP(src=src, dst=dst, tos=tos, id=0, flags=0, ttl=64)
        else:
            tunnel_hdr = IPv6(src=src, dst=dst, tc=tos, fl=0, hlim=64)
    rc, out, err = run(binary, args + [raw(pkt).hex()])
    if not check(rc == 0, f"{name}: ivnsec protect rc={rc} {err}"):
        return
    wire = bytes.fromhex(out)
    outer_cls = IP if (mode == "tunnel4" or (mode == "transport" and inner_v == 4)) else IPv6
    sa = scapy_sa(profile, key, auth_key, spi, tunnel_hdr, high, esn)
    try:
        dec = sa.decrypt(outer_cls(wire))
        check(raw(dec) == raw(pkt), f"{name}: scapy decrypted something else")
    except Exception as e:  # scapy raises on a bad ICV
        check(False, f"{name}: scapy rejected ivnsec's packet: {e!r}")

    # Byte-exact: scapy protects the same packet with the same seq and IV.
    try:
        enc = sa.encrypt(pkt, seq_num=low, iv=iv if ivlen else None)
        check(raw(enc) == wire, f"{name}: scapy's bytes differ\n  ivnsec {wire.hex()}\n  scapy  {raw(enc).hex()}")
    except Exception as e:
        check(False, f"{name}: scapy encrypt failed: {e!r}")

    # scapy -> ivnsec. A fresh ivnsec receiver infers ESN high bits from its window (starting at
    # 0), so this direction uses high = 0 with ESN (still the 12-byte AAD / appended ICV input).
    seq2 = rng.randrange(1, 2**32)
    sa2 = scapy_sa(profile, key, auth_key, spi, tunnel_hdr, 0, esn)
    enc2 = sa2.encrypt(pkt, seq_num=seq2)
    vargs = ["frame", "verify"] + sa_args(profile, key, auth_key, spi, esn)
    rc, out, err = run(binary, vargs + [raw(enc2).hex()])
    if check(rc == 0, f"{name}: ivnsec rejected scapy's packet: rc={rc} {err}"):
        check(bytes.fromhex(out) == raw(pkt), f"{name}: ivnsec recovered something else")
    # ... and a flipped bit in scapy's packet is refused.
    bad = bytearray(raw(enc2))
    bad[-1 - rng.randrange(16)] ^= 1 << rng.randrange(8)
    rc, out, err = run(binary, vargs + [bad.hex()])
    check(rc == 1 and err.startswith("DROP bad_tag"), f"{name}: tampered ICV not refused as bad_tag: rc={rc} {err}")


# tshark options that stop dissection at the decrypted transport header's protocol: with UDP
# and TCP disabled the payload is shown as data, so no dissector of a random payload can throw
# before the ESP dissector has added its ICV verdict.
NO_PAYLOAD_DISSECTION = ["--disable-protocol", "udp", "--disable-protocol", "tcp"]


def tshark_rows(name, pcap, opts, fields, want):
    """tshark's `fields` (separated by |) for each packet of `pcap`, read with `opts`; checks
    that it ran and printed `want` rows. None when it did not run."""
    cmd = ["tshark", "-r", pcap, *opts, "-T", "fields", "-E", "separator=|"]
    for field in fields:
        cmd += ["-e", field]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if not check(p.returncode == 0, f"{name}: tshark rc={p.returncode} {p.stderr.strip()}"):
        return None
    rows = p.stdout.strip().splitlines()
    check(len(rows) == want, f"{name}: tshark printed {len(rows)} rows for {want} packets")
    return rows


def tshark_checks(binary, rng, count):
    if subprocess.run(["sh", "-c", "command -v tshark"], capture_output=True).returncode != 0:
        check(False, "tshark: not installed")
        return
    for profile, (_, klen, auth, ivlen, ws_enc, ws_auth) in PROFILES.items():
        if ws_enc is None:
            print(f"SKIP tshark {profile}: not implemented by this Wireshark's ESP dissector")
            continue
        for mode in ["transport", "tunnel4", "tunnel6"]:
            for inner_v in [4, 6]:
                key = bytes(rng.randrange(256) for _ in range(klen))
                auth_key = bytes(rng.randrange(256) for _ in range(32)) if auth else b""
                spi = rng.randrange(256, 2**32)
                pkts = [random_packet(rng, inner_v, (49152, 65536))[0] for _ in range(count)]
                args = ["frame", "protect"] + sa_args(profile, key, auth_key, spi, False) + ["--seq", "1"]
                if mode != "transport":
                    src, dst = T4 if mode == "tunnel4" else T6
                    args += ["--mode", "tunnel", "--tunnel-src", src, "--tunnel-dst", dst]
                rc, out, err = run(binary, args + ["-"], stdin="\n".join(raw(p).hex() for p in pkts) + "\n")
                name = f"tshark {profile} {mode} inner=v{inner_v}"
                if not check(rc == 0, f"{name}: ivnsec protect rc={rc} {err}"):
                    continue
                frames = []
                for line in out.splitlines():
                    w = bytes.fromhex(line)
                    et = 0x0800 if w[0] >> 4 == 4 else 0x86DD
                    frames.append(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=et) / Raw(w))
                outer = "IPv4" if (mode == "tunnel4" or (mode == "transport" and inner_v == 4)) else "IPv6"
                with tempfile.TemporaryDirectory() as d:
                    pcap = os.path.join(d, "esp.pcap")
                    wrpcap(pcap, frames)
                    uat = (f'"{outer}","*","*","0x{spi:08x}","{ws_enc}","0x{key.hex()}",'
                           f'"{ws_auth}","{("0x" + auth_key.hex()) if auth_key else ""}"')
                    esp_opts = ["-o", "esp.enable_encryption_decode:TRUE",
                                "-o", "esp.enable_authentication_check:TRUE", "-o", f"uat:esp_sa:{uat}"]
                    # The ICV verdict, with the decrypted payload left undissected: the dissector
                    # adds it after the payload's, so a random payload that some heuristic
                    # dissector (RTCP, say) takes for its own and throws on would hide it.
                    icvs = tshark_rows(name, pcap, esp_opts + NO_PAYLOAD_DISSECTION,
                                       ["esp.icv_good", "esp.icv_bad"], len(pkts))
                    if icvs is None:
                        continue
                    for icv in icvs:
                        f = icv.split("|")
                        good = f[0] in ("1", "True")
                        check(good and f[1] in ("0", "False", ""), f"{name}: ICV not [correct]: {icv}")
                    # The decrypted transport header and payload, dissected.
                    rows = tshark_rows(name, pcap, esp_opts,
                                       ["udp.length", "tcp.seq_raw", "udp.payload", "tcp.payload"], len(pkts))
                    if rows is None:
                        continue
                    for row, pkt in zip(rows, pkts):
                        f = row.split("|")
                        # The decrypted inner transport header and payload as tshark dissects them.
                        l4 = pkt.payload
                        payload = bytes(l4.payload)
                        if isinstance(l4, UDP):
                            ok = "," not in f[0] and f[0].split(",")[-1] == str(len(raw(l4)))
                        else:
                            ok = f[1].split(",")[-1] == str(l4.seq)
                        got = f[2] if isinstance(l4, UDP) else f[3]
                        ok = ok and got.split(",")[-1].replace(":", "") == payload.hex()
                        check(ok, f"{name}: tshark's decryption differs: {row}")
                    # A flipped ICV bit: tshark must flag it.
                    bad = [bytearray(raw(fr)) for fr in frames[:1]]
                    bad[0][-1] ^= 1
                    wrpcap(pcap, [Ether(bytes(b)) for b in bad])
                    p = subprocess.run(
                        ["tshark", "-r", pcap, *esp_opts, *NO_PAYLOAD_DISSECTION,
                         "-T", "fields", "-e", "esp.icv_bad"], capture_output=True, text=True)
                    check(p.stdout.strip() in ("1", "True"), f"{name}: tshark did not flag a bad ICV: {p.stdout!r}")
                # The human-readable view says [correct] too.
                if mode == "transport" and inner_v == 4:
                    with tempfile.TemporaryDirectory() as d:
                        pcap = os.path.join(d, "esp.pcap")
                        wrpcap(pcap, frames[:1])
                        p = subprocess.run(
                            ["tshark", "-r", pcap, "-V", *esp_opts, *NO_PAYLOAD_DISSECTION],
                            capture_output=True, text=True)
                        check("[correct]" in p.stdout, f"{name}: -V output lacks '[correct]'")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else random.randrange(2**32)
    count = int(sys.argv[sys.argv.index("--count") + 1]) if "--count" in sys.argv else 3
    print(f"esp interop: seed {seed} (rerun with --seed {seed})", flush=True)
    rng = random.Random(seed)
    scapy_checks(binary, rng, count)
    tshark_checks(binary, rng, count)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
