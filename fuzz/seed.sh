#!/usr/bin/env bash
# Generates seed corpora for the IVN-AE, SecOC and SOME/IP fuzz targets. IVN-AE and SecOC: real frames
# from `ivnsec frame protect`:
#   fuzz/corpus/ivnae_verify/  selector byte ‖ IVN-AE frame, protected with the same fixed keys as
#                              fuzz_targets/ivnae_verify.rs, so the fuzzer starts on accepted frames
#   fuzz/corpus/ivnae_parse/   the same frames without the selector byte, plus short/odd headers
#   fuzz/corpus/secoc_verify/  selector bytes ‖ a UDP datagram of AUTOSAR PDU headers and Secured
#                              I-PDUs, protected with the fixed keys of fuzz_targets/secoc_verify.rs
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
# SecOC: datagrams of AUTOSAR PDU headers and Secured I-PDUs, with the fixed keys of
# fuzz_targets/secoc_verify.rs. Selector byte 0: MAC (bit 0), provider (bit 1), layout (bits 2-4);
# byte 1: 0 (one verify attempt, the default window). Layouts must match LAYOUTS there.
secoc_dir=fuzz/corpus/secoc_verify
mkdir -p "$secoc_dir"
secoc_key() {
    local len=$1 id=$2 i out=
    for ((i = 0; i < len; i++)); do out+=$(printf '%02x' $((((i * 7) & 255) ^ id))); done
    printf '%s' "$out"
}
secoc_layouts="0 8 24 64
1 3 28 40
2 0 32 16
3 16 64 16
4 4 8 12
5 64 128 64
6 5 13 31
7 1 1 1"
secoc_count=0
while read -r lidx fvb macb full; do
    for alg in 0 1; do
        if [ $alg = 0 ]; then prof=secoc-cmac-aes128 klen=16; else prof=secoc-hmac-sha256 klen=32; fi
        for prov in 0 1; do
            dgram=$(printf '%02x00' $((alg | (prov << 1) | (lidx << 2))))
            for id in 16 17; do
                # Full FVs of 1 bit allow a single PDU.
                n=3
                [ "$full" = 1 ] && n=1
                pdus=""
                for ((j = 0; j < n; j++)); do pdus+="$(pattern $((1 + j * 9)))"$'\n'; done
                while read -r sec; do
                    dgram+=$(printf '%08x%08x' "$id" $((${#sec} / 2)))$sec
                    secoc_count=$((secoc_count + 1))
                done < <(printf '%s' "$pdus" | "$bin" frame protect --profile "$prof" \
                    --key "$(secoc_key "$klen" "$id")" --data-id $((0x100 | id)) --freshness 1 \
                    --fv-bits "$fvb" --mac-bits "$macb" --full-fv-bits "$full" -)
            done
            # A PDU of an id the target skips, then a truncated header.
            dgram+="000000200000000101abcd"
            put "$secoc_dir" "$dgram"
        done
    done
done <<<"$secoc_layouts"

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

# SOME/IP: scapy-built known answers (request, TP segment, SD with Offer/Subscribe and IPv4
# endpoint options) for the parser, and the Python-computed secured known answers of
# crates/ivnsec/tests/someip_sa.rs (key 00 01 02 …, key id 7, salt a1a2a3a4) for verify, each
# behind the selector byte of fuzz_targets/someip_verify.rs (suite index | level << 3).
someip_parse_dir=fuzz/corpus/someip_parse
someip_verify_dir=fuzz/corpus/someip_verify
mkdir -p "$someip_parse_dir" "$someip_verify_dir"
req=123400010000000b0102030401010000616263
tp=123480010000001c0000000701012200000005c111111111111111111111111111111111
sd=ffff81000000004c0000000101010200c000000000000020010000101234000101000003000000000601001012340001010000030000000100000018000904000a4d00010011772d000904000a4d000200069c40
for hex in "$req" "$tp" "$sd" "$req$req" "$req$tp" "0000$req" "$sd$req"; do put "$someip_parse_dir" "$hex"; done
while read -r sel hex; do
    put "$someip_verify_dir" "$sel$hex"
    put "$someip_parse_dir" "$hex"
done <<'KA'
08 123400010000002e010203040101000007000000000000000578f45f546746ae49ec2bd22ad5c80b0451db235e3175f78625dd282ef0
00 123400010000002e010203040101000007000000000000000568656c6c6f20534f4d452f4950e439c6261f499d5cf3934819db76d0c4
09 123400010000002e0102030401010000070000000000000005006b5220c8dd9c2c5e5c155e7348baca3175b0d1ca3958880cb05c6990
01 123400010000002e010203040101000007000000000000000568656c6c6f20534f4d452f495049cc1872c60b52b6e1a35299cb16c5dc
0a 123400010000002e01020304010100000700000000000000056991c75a0dace2471997fbe2fc5ec82825d1d04e05b2ce8d920ceddb64
02 123400010000002e010203040101000007000000000000000568656c6c6f20534f4d452f49504d70882ae1a90817be64bf5070af27c3
0b 123400010000002e010203040101000007000000000000000549f987ec47c718bb72ffa09d6bfc07c607857e9e43acd58d60aca21325
03 123400010000002e010203040101000007000000000000000568656c6c6f20534f4d452f49508be4c543dbf8c3412f0e70befed7a710
0c 123400010000002e0102030401010000070000000000000005f7b3ff1bfb3d6025643989fb3c4ed013398785d4829640ebabbc33b05d
04 123400010000002e010203040101000007000000000000000568656c6c6f20534f4d452f49501cc8986ba52f6d327c48c85313a530a3
10 123400010000000b0102030401010000616263
KA

echo "seed.sh: $count frames -> $verify_dir ($(ls "$verify_dir" | wc -l) files), $parse_dir ($(ls "$parse_dir" | wc -l) files), $pcap_dir ($(ls "$pcap_dir" | wc -l) files); $secoc_count SecOC PDUs -> $secoc_dir ($(ls "$secoc_dir" | wc -l) files); someip: $(ls "$someip_parse_dir" | wc -l) parse, $(ls "$someip_verify_dir" | wc -l) verify seeds"
