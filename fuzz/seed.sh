#!/usr/bin/env bash
# Generates seed corpora for the IVN-AE fuzz targets with real frames from `ivnsec frame protect`:
#   fuzz/corpus/ivnae_verify/  selector byte ‖ IVN-AE frame, protected with the same fixed keys as
#                              fuzz_targets/ivnae_verify.rs, so the fuzzer starts on accepted frames
#   fuzz/corpus/ivnae_parse/   the same frames without the selector byte, plus short/odd headers
# Idempotent (files are named by content). Binary: $IVNSEC, else target/debug/ivnsec (built if
# missing). Usage: bash fuzz/seed.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bin=${IVNSEC:-target/debug/ivnsec}
if [ ! -x "$bin" ]; then
    cargo build --quiet --bin ivnsec
fi

parse_dir=fuzz/corpus/ivnae_parse
verify_dir=fuzz/corpus/ivnae_verify
mkdir -p "$parse_dir" "$verify_dir"

# Writes the bytes of hex string $2 to a content-named file in directory $1.
put() {
    local dir=$1 hex=$2 name
    name=$(printf '%s' "$hex" | cksum | cut -d' ' -f1)
    printf '%b' "$(printf '%s' "$hex" | sed 's/../\\x&/g')" >"$dir/seed-$name"
}

# n bytes of hex made from a simple pattern (no randomness: seeds stay reproducible).
pattern() {
    local n=$1 i out=
    for ((i = 0; i < n; i++)); do out+=$(printf '%02x' $(((i * 37 + 11) & 255))); done
    printf '%s' "$out"
}

# The fixed keys of fuzz_targets/ivnae_verify.rs for key id $2 and a cipher key of $1 bytes.
cipher_key() {
    local len=$1 id=$2 i out=
    for ((i = 0; i < len; i++)); do out+=$(printf '%02x' $((((i * 7) & 255) ^ id))); done
    printf '%s' "$out"
}
mac_key() {
    local id=$1 i out=
    for ((i = 0; i < 64; i++)); do out+=$(printf '%02x' $((i ^ 0x36 ^ id))); done
    printf '%s' "$out"
}
iv() { printf 'a55a000102030405060708%02x' $((0x09 ^ $1)); }

# Index (low nibble of the selector byte) | profile | cipher key length | mac key? | tag length.
# Must match PROFILES in fuzz_targets/ivnae_verify.rs.
profiles="0 plain 0 - -
1 crc32 0 - -
2 aes128-gcm/conf 16 - -
3 aes128-gcm/auth 16 - -
4 aes128-ccm/conf 16 - -
5 chacha20-poly1305/conf 32 - -
6 chacha20-poly1305/auth 32 - -
7 hmac-sha256 0 mac 16
8 aes128-cbc-hmac-sha256 16 mac -
9 aes256-ctr-hmac-sha1 32 mac 12"

# Plain frames: dst ‖ src ‖ EtherType ‖ payload of 0, 1, 15, 46 and 300 bytes.
plains=""
for n in 0 1 15 46 300; do
    plains+="0200000000020200000000010800$(pattern "$n")"$'\n'
done

count=0
while read -r idx prof klen mac tlen; do
    for id in 1 2; do
        args=(--profile "$prof" --key-id "$id")
        [ "$klen" != 0 ] && args+=(--key "$(cipher_key "$klen" "$id")")
        [ "$mac" = mac ] && args+=(--mac-key "$(mac_key "$id")")
        [ "$tlen" != - ] && args+=(--tag-len "$tlen")
        case $prof in plain | crc32) ;; *) args+=(--iv "$(iv "$id")") ;; esac
        for seq in 1 4294967296; do
            while read -r frame; do
                # selector: profile index, replay window index from the key id, fast provider for id 2
                sel=$((idx | ((id - 1) << 4) | ((id - 1) << 7)))
                put "$verify_dir" "$(printf '%02x' "$sel")$frame"
                put "$parse_dir" "$frame"
                count=$((count + 1))
            done < <(printf '%s' "$plains" | "$bin" frame protect "${args[@]}" --seq "$seq" -)
        done
    done
done <<<"$profiles"

# A few malformed headers for the parser.
for hex in "" 02 020000000002020000000001 020000000002020000000001 \
    02000000000202000000000188b5 02000000000202000000000188b50110000100000000000000 \
    02000000000202000000000188b5021000010000000000000001 02000000000202000000000188b5011000820000000000000001; do
    [ -n "$hex" ] && put "$parse_dir" "$hex"
done
# pcap_read: small real captures (classic pcap written with Python's struct module) of frames from
# `ivnsec frame protect`: IVN-AE, MACsec, ESP in Ethernet/IPv4, and a plain frame; in both
# timestamp resolutions and byte orders, with a record cut by the snaplen, an empty capture and a
# truncated one.
pcap_dir=fuzz/corpus/pcap_read
mkdir -p "$pcap_dir"
if command -v python3 >/dev/null 2>&1; then
    plain_frame=0200000000020200000000010800$(pattern 40)
    ivnae_frames=$(printf '%s\n%s\n' "$plain_frame" "$plain_frame" |
        "$bin" frame protect --profile aes128-gcm --key "$(cipher_key 16 1)" --iv "$(iv 1)" --seq 1 -)
    macsec_frames=$(printf '%s\n' "$plain_frame" |
        "$bin" frame protect --profile macsec-gcm-aes-128 --key "$(cipher_key 16 1)" \
            --sci 0200000000010001 --an 0 --pn 1 -)
    # IPv4/UDP, 20 + 8 + 20 bytes.
    esp_packet=$(printf '%s\n' "4500003000010000401100000a0000010a0000023039303a001c0000$(pattern 20)" |
        "$bin" frame protect --profile esp-aes128-gcm --key "$(cipher_key 20 1)" --spi 4096 --seq 1 -)
    printf '%s\n%s\n%s\n%s\n' "$ivnae_frames" "$macsec_frames" \
        "0200000000020200000000010800$esp_packet" "$plain_frame" |
        python3 -c '
import struct, sys, zlib
out = sys.argv[1]
frames = [bytes.fromhex(l) for l in sys.stdin.read().split()]
def capture(order, magic, snaplen, recs):
    b = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, snaplen, 1)
    for i, (data, orig) in enumerate(recs):
        b += struct.pack(order + "IIII", 1700000000 + i, 1000 * i, len(data), orig) + data
    return b
files = [
    capture("<", 0xA1B23C4D, 262144, [(f, len(f)) for f in frames]),
    capture("<", 0xA1B2C3D4, 65535, [(f, len(f)) for f in frames[:2]]),
    capture(">", 0xA1B2C3D4, 65535, [(f, len(f)) for f in frames[2:]]),
    capture(">", 0xA1B23C4D, 32, [(f[:32], len(f)) for f in frames[:3]]),
    capture("<", 0xA1B2C3D4, 0, []),
]
files.append(files[0][:-3])
for b in files:
    with open("%s/seed-%08x" % (out, zlib.crc32(b)), "wb") as f:
        f.write(b)
' "$pcap_dir"
else
    echo "seed.sh: python3 not found; pcap_read starts from an empty corpus" >&2
fi

echo "seed.sh: $count frames -> $verify_dir ($(ls "$verify_dir" | wc -l) files), $parse_dir ($(ls "$parse_dir" | wc -l) files), $pcap_dir ($(ls "$pcap_dir" | wc -l) files)"
