#!/usr/bin/env python3
"""Prints the worked examples of docs/wire-ivnae.md section 9 from the independent Python
reference (ivnae_ref.py), not from ivnsec: the examples in the specification are the reference's
output, which `ivnsec frame protect` must reproduce (crosscheck.py checks the same for random
inputs).

Usage: ivnae_examples.py [--check IVNSEC_BINARY]
With --check, also runs `ivnsec frame protect` on every example and exits 1 on any difference.
"""

from __future__ import annotations

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ivnae_ref as ref  # noqa: E402

PAYLOAD = b"IVN-AE v2 worked example payload"
assert len(PAYLOAD) == 32
PLAIN = bytes.fromhex("020000000002" "020000000001" "0800") + PAYLOAD
KEY = bytes(range(16))
MAC_KEY = bytes(range(0x40, 0x60))
IV = bytes.fromhex("a0a1a2a3a4a5a6a7a8a9aaab")
KEY_ID = 3
SEQ = 42

# (profile, keyword arguments of the SA beyond the key id)
EXAMPLES = [
    ("plain", {}),
    ("crc32", {}),
    ("aes128-gcm/conf", {"key": KEY, "iv": IV}),
    ("aes128-gcm/auth", {"key": KEY, "iv": IV}),
    ("hmac-sha256", {"mac_key": MAC_KEY, "tag_len": 16}),
    ("aes128-cbc-hmac-sha256", {"key": KEY, "mac_key": MAC_KEY, "iv": IV}),
    ("aes128-ctr-hmac-sha1", {"key": KEY, "mac_key": MAC_KEY, "iv": IV}),
]


def cli_args(profile: str, kw: dict, key_id: int) -> list[str]:
    a = ["frame", "protect", "--profile", profile, "--key-id", str(key_id), "--seq", str(SEQ)]
    if "key" in kw:
        a += ["--key", kw["key"].hex()]
    if "mac_key" in kw:
        a += ["--mac-key", kw["mac_key"].hex()]
    if "iv" in kw:
        a += ["--iv", kw["iv"].hex()]
    if "tag_len" in kw:
        a += ["--tag-len", str(kw["tag_len"])]
    return a + [PLAIN.hex()]


def show(profile: str, kw: dict, key_id: int = KEY_ID) -> tuple[bytes, list[str]]:
    sa = ref.Sa(profile, key_id=key_id, **kw)
    frame = sa.protect(PLAIN, SEQ)
    t = sa.tag_len
    a, body, tag = frame[:26], frame[26 : len(frame) - t], frame[len(frame) - t :]
    n = sa.nonce(SEQ)
    print(f"**`{profile}`** key id {key_id} ({len(frame)} bytes)")
    print()
    if "iv" in kw:
        print(f"    N     {n.hex()}")
    if sa.suite.kind == "etm" and sa.suite.mode == "cbc":
        print(f"    CBC IV = AES_key(N ‖ 00000000) = {sa._cbc_iv(n).hex()}")
    if sa.suite.kind == "etm" and sa.suite.mode == "ctr":
        print(f"    initial counter block = N ‖ 00000001 = {n.hex()}00000001")
    print(f"    A     {a.hex()}")
    print(f"    {'C   ' if sa.level == 'conf' else 'body'}  {body.hex()}")
    print(f"    tag   {tag.hex() if tag else '(none)'}")
    print()
    return frame, cli_args(profile, kw, key_id)


def main() -> int:
    check = None
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check = sys.argv[2]
    elif len(sys.argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    print(f"plain frame  {PLAIN.hex()}")
    print()
    cases = [show(p, kw) for p, kw in EXAMPLES]
    print("key id 1 and key id 2, same key, IV, sequence number and frame (aes128-gcm/conf):")
    print()
    cases += [show("aes128-gcm/conf", {"key": KEY, "iv": IV}, k) for k in (1, 2)]
    if check is None:
        return 0
    bad = 0
    for frame, args in cases:
        out = subprocess.run([check, *args], capture_output=True, text=True)
        if out.returncode != 0 or out.stdout.strip() != frame.hex():
            bad += 1
            print(f"DIFFERS: ivnsec {' '.join(args)}\n  ivnsec {out.stdout.strip()} {out.stderr.strip()}\n  python {frame.hex()}", file=sys.stderr)
    print(f"ivnsec frame protect: {len(cases) - bad} of {len(cases)} examples identical", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
