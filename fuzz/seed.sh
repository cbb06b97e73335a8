#!/usr/bin/env bash
# Generates seed corpora for the fuzz targets. IVN-AE, SecOC, MACsec, ESP: real frames from
# `ivnsec frame protect`:
#   fuzz/corpus/ivnae_verify/  selector byte ‖ IVN-AE frame, protected with the same fixed keys as
#                              fuzz_targets/ivnae_verify.rs, so the fuzzer starts on accepted frames
#   fuzz/corpus/ivnae_parse/   the same frames without the selector byte, plus short/odd headers
#   fuzz/corpus/secoc_verify/  selector bytes ‖ a UDP datagram of AUTOSAR PDU headers and Secured
#                              I-PDUs, protected with the fixed keys of fuzz_targets/secoc_verify.rs
#   fuzz/corpus/macsec_verify/ selector byte ‖ MACsec frame, every cipher suite, with the fixed
#                              key/SCI/AN/SSCI/salt of fuzz_targets/macsec_verify.rs
#   fuzz/corpus/esp_verify/    selector byte ‖ ESP-in-IP packet, every transform, with the fixed
#                              SPIs and keys of fuzz_targets/esp_verify.rs
#   fuzz/corpus/frag_reassemble/ streams of fragment units (in order, reversed, interleaved,
#                              hostile) in the record format of fuzz_targets/frag_reassemble.rs
# The MACsec and ESP seeds are checked with `ivnsec frame verify` (the same receive code, with the
# target's SA parameters); the script exits non-zero when one is not accepted.
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

# A few malformed headers for the parser (version 3: unknown; version 1: the previous version,
# parsed and left to the SA), and a version 1 header.
for hex in "" 02 020000000002020000000001 020000000002020000000001 \
    02000000000202000000000188b5 02000000000202000000000188b50210000100000000000000 \
    02000000000202000000000188b5031000010000000000000001 02000000000202000000000188b5021000820000000000000001 \
    02000000000202000000000188b50110000100000000000000000108004142; do
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
# crates/ivnsec-conformance/src/vectors/someip.rs (key 00 01 02 …, key id 7, salt a1a2a3a4) for
# verify, each behind the selector byte of fuzz_targets/someip_verify.rs (suite index | level << 3).
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

# Internet checksum (RFC 1071) of hex string $1, as 4 hex digits.
inet_csum() {
    local h=$1 s=0 i
    ((${#h} % 4)) && h+=00
    for ((i = 0; i < ${#h}; i += 4)); do s=$((s + 16#${h:i:4})); done
    while ((s >> 16)); do s=$(((s & 0xffff) + (s >> 16))); done
    printf '%04x' $((~s & 0xffff))
}
# IPv4 / IPv6 packet, UDP 12345 -> 12346 carrying $3 bytes of pattern, from address $1 to $2 (hex),
# with correct lengths and checksums.
udp4() {
    local src=$1 dst=$2 data len
    data=$(pattern "$3")
    len=$(printf '%04x' $((8 + $3)))
    local udp=3039303a$len$(inet_csum "$src${dst}0011${len}3039303a${len}0000$data")$data
    local tot
    tot=$(printf '%04x' $((28 + $3)))
    printf '4500%s00014000%s%s%s%s' "$tot" 4011 "$(inet_csum "4500${tot}0001400040110000$src$dst")" \
        "$src$dst" "$udp"
}
udp6() {
    local src=$1 dst=$2 data ulen
    data=$(pattern "$3")
    ulen=$((8 + $3))
    printf '60000000%04x1140%s%s3039303a%04x%s%s' "$ulen" "$src" "$dst" "$ulen" \
        "$(inet_csum "$src$dst$(printf '%08x' "$ulen")000000113039303a$(printf '%04x' "$ulen")0000$data")" "$data"
}
v4a=0a000001 v4b=0a000002 v4c=0a010001 v4d=0a010002
v6a=fd000000000000000000000000000001 v6b=fd000000000000000000000000000002
v6c=fd000000000000010000000000000001 v6d=fd000000000000010000000000000002

# MACsec: frames for fuzz_targets/macsec_verify.rs: key 5a…5a (16 or 32 bytes), SCI
# 0200000000010001, AN 1, XPN SSCI 7a30c118 and salt e630e81a48de86a21c66fa6d. Selector: suite
# (bits 0-1, order of CipherSuite::ALL), validateFrames (bits 2-3: strict, check, disabled),
# replay window (bits 4-5), replayProtect (bit 6), fast provider (bit 7). Every seed is checked
# with `ivnsec frame verify` (same SA, validateFrames, window, provider): it must count the frame
# as InPktsOK, i.e. validated (status Ok), not merely delivered.
macsec_dir=fuzz/corpus/macsec_verify
mkdir -p "$macsec_dir"
macsec_suites="macsec-gcm-aes-128 macsec-gcm-aes-256 macsec-gcm-aes-xpn-128 macsec-gcm-aes-xpn-256"
macsec_validate=(strict check disabled)
macsec_windows=(0 1 64 65536)
# src MAC 02:00:00:00:00:01, the MAC of the SCI, so that ES frames (SCI = src ‖ 0001) belong to it.
macsec_payloads=("" "0800$(udp4 $v4a $v4b 18)" "0800$(udp4 $v4a $v4b 100)" "86dd$(udp6 $v6a $v6b 1452)")
macsec_count=0
macsec_bad=0
sidx=0
for suite in $macsec_suites; do
    klen=16
    case $suite in *256) klen=32 ;; esac
    key=$(printf '5a%.0s' $(seq "$klen"))
    xpn=()
    pns=(1 2 4294967295 1000)
    case $suite in *xpn*)
        xpn=(--ssci 7a30c118 --salt e630e81a48de86a21c66fa6d)
        # 2^32: the one PN above 32 bits a fresh receive SA (lowest PN 1) recovers (PN low half 0).
        pns=(1 4294967296 4294967295 2)
        ;;
    esac
    m=0
    for mode in "" --no-sci --integrity-only --es "--integrity-only --scb"; do
        for ((p = 0; p < ${#macsec_payloads[@]}; p++)); do
            pn=${pns[p]}
            # validateFrames disabled only with confidentiality (it then still validates).
            case $mode in *integrity*) v=$(((m + p) % 2)) ;; *) v=$(((m + p) % 3)) ;; esac
            w=$(((m + p + sidx) % 4))
            rp=$(((m + p) / 2 % 2))
            fast=$(((m + p + sidx) % 2))
            sel=$((sidx | (v << 2) | (w << 4) | (rp << 6) | (fast << 7)))
            # shellcheck disable=SC2086
            frame=$("$bin" frame protect --profile "$suite" --key "$key" --sci 0200000000010001 \
                --an 1 --pn "$pn" "${xpn[@]}" $mode "020000000002020000000001${macsec_payloads[p]:-0800}" 2>&1) || {
                echo "seed.sh: macsec protect failed: $frame" >&2
                exit 1
            }
            prov=portable
            [ "$fast" = 1 ] && prov=fast
            if ! err=$("$bin" frame verify --profile "$suite" --key "$key" --sci 0200000000010001 --an 1 \
                "${xpn[@]}" --validate "${macsec_validate[v]}" --replay-window "${macsec_windows[w]}" \
                --provider "$prov" "$frame" 2>&1 >/dev/null) || [[ $err != *InPktsOK=1* ]] ||
                [[ $err == *"NOT VALIDATED"* ]]; then
                echo "seed.sh: macsec seed not accepted ($suite $mode pn $pn): $err" >&2
                macsec_bad=$((macsec_bad + 1))
            fi
            put "$macsec_dir" "$(printf '%02x' "$sel")$frame"
            macsec_count=$((macsec_count + 1))
        done
        m=$((m + 1))
    done
    sidx=$((sidx + 1))
done

# ESP: IP packets for fuzz_targets/esp_verify.rs: SPIs 0x100 and 0x101, key byte i = 7i ^ (SPI &
# 0xff), HMAC key byte i = i ^ 0x5c ^ (SPI & 0xff). Selector: transform (bits 0-2, order of
# EspAlg::ALL), ESN (bit 3), replay window (bits 4-5: 0, 1, 64, 4096), resumed receive state (bit
# 6: highest sequence number seen 2^32 + 16 with ESN, 2^32 - 256 without), fast provider (bit 7).
# Every seed is checked with `ivnsec frame verify` (same SA and window; a resumed state is
# re-created by verifying, first, a packet with sequence number 2^32 - 256, or with ESN two with
# 2^31 and 2^32 + 16).
esp_dir=fuzz/corpus/esp_verify
mkdir -p "$esp_dir"
esp_algs=(esp-aes128-gcm esp-aes256-gcm esp-aes128-gmac esp-aes256-gmac esp-null-hmac-sha256
    esp-aes128-cbc-hmac-sha256 esp-aes256-cbc-hmac-sha256 esp-chacha20-poly1305)
esp_keylens=(20 36 20 36 0 16 32 36)
esp_ivlens=(8 8 8 8 0 16 16 8)
esp_windows=(0 1 64 4096)
# Packets: transport IPv4 (empty UDP, 33 bytes), transport IPv6 (100 bytes), tunnel IPv4 in IPv4,
# tunnel IPv6 in IPv6 (1200 bytes); the first sequence number for each.
esp_packets=("$(udp4 $v4a $v4b 0)" "$(udp4 $v4a $v4b 33)" "$(udp6 $v6a $v6b 100)"
    "$(udp4 $v4c $v4d 20)" "$(udp6 $v6c $v6d 1200)")
esp_tunnels=("" "" "" "--mode tunnel --tunnel-src 10.0.0.1 --tunnel-dst 10.0.0.2"
    "--mode tunnel --tunnel-src fd00::1 --tunnel-dst fd00::2")
esp_seqs=(1 2 7 1000 65536)
esp_count=0
esp_bad=0
ivc=0
# esp_seed ALG_INDEX ESN(0|1) WINDOW_INDEX RESUME(0|1) SPI SEQ PACKET [MODE OPTIONS...]
esp_seed() {
    local a=$1 esn=$2 w=$3 resume=$4 spi=$5 seq=$6 packet=$7 alg key auth iv sel prov out
    shift 7
    alg=${esp_algs[a]}
    local sa=(--profile "$alg" --spi "$spi")
    key=$(cipher_key "${esp_keylens[a]}" $((spi & 255)))
    [ -n "$key" ] && sa+=(--key "$key")
    case $alg in *hmac*)
        auth=
        for ((i = 0; i < 32; i++)); do auth+=$(printf '%02x' $((i ^ 0x5c ^ (spi & 255)))); done
        sa+=(--auth-key "$auth")
        ;;
    esac
    [ "$esn" = 1 ] && sa+=(--esn)
    ivc=$((ivc + 1))
    iv=
    [ "${esp_ivlens[a]}" != 0 ] && iv=$(printf "%0$((esp_ivlens[a] * 2))x" "$ivc")
    out=$("$bin" frame protect "${sa[@]}" ${iv:+--iv "$iv"} --seq "$seq" "$@" "$packet" 2>&1) || {
        echo "seed.sh: esp protect failed ($alg seq $seq): $out" >&2
        exit 1
    }
    # Fast provider (bit 7) only where the target would use it; the CLI's auto does the same.
    sel=$((a | (esn << 3) | (w << 4) | (resume << 6) | (((a + w + esn) % 2) << 7)))
    prov=portable
    [ $((sel >> 7)) = 1 ] && prov=auto
    local prime=()
    if [ "$resume" = 1 ]; then
        if [ "$esn" = 1 ]; then
            prime+=("$("$bin" frame protect "${sa[@]}" --seq 2147483648 "$packet")")
            prime+=("$("$bin" frame protect "${sa[@]}" --seq 4294967312 "$packet")")
        else
            prime+=("$("$bin" frame protect "${sa[@]}" --seq 4294967040 "$packet")")
        fi
    fi
    if ! printf '%s\n' "${prime[@]}" "$out" |
        "$bin" frame verify "${sa[@]}" --replay-window "${esp_windows[w]}" --provider "$prov" - \
            >/dev/null 2>&1; then
        echo "seed.sh: esp seed not accepted ($alg esn $esn window ${esp_windows[w]} resume $resume seq $seq)" >&2
        esp_bad=$((esp_bad + 1))
    fi
    put "$esp_dir" "$(printf '%02x' "$sel")$out"
    esp_count=$((esp_count + 1))
}
for ((a = 0; a < 8; a++)); do
    for esn in 0 1; do
        for ((p = 0; p < ${#esp_packets[@]}; p++)); do
            # shellcheck disable=SC2086
            esp_seed "$a" "$esn" $(((a + p) % 4)) 0 $((0x100 + (p + esn) % 2)) "${esp_seqs[p]}" \
                "${esp_packets[p]}" ${esp_tunnels[p]}
        done
    done
    # Sequence number edges: the last 32-bit one (fresh SA; with ESN, window 1 so that the high
    # half is inferred as 0), and a resumed SA: near 2^32 without ESN; with ESN, windows 64 and
    # 4096 just before the wrap (high half inferred as Th - 1), window 64 after it (Th), window 1
    # one wrap ahead (Th + 1).
    esp_seed "$a" 0 0 0 0x100 4294967295 "${esp_packets[1]}"
    esp_seed "$a" 1 1 0 0x101 4294967295 "${esp_packets[2]}"
    esp_seed "$a" 0 2 1 0x101 4294967295 "${esp_packets[0]}"
    esp_seed "$a" 1 3 1 0x100 $((0xfffff800)) "${esp_packets[1]}"
    esp_seed "$a" 1 2 1 0x101 $((0x100000020)) "${esp_packets[1]}"
    esp_seed "$a" 1 2 1 0x100 $((0xfffffff0)) "${esp_packets[2]}"
    esp_seed "$a" 1 1 1 0x101 $((0x200000005)) "${esp_packets[0]}"
done

# frag_reassemble: streams of fragment units (docs/fragmentation.md) as the target reads them,
# records `peer ‖ dt ×100 µs ‖ u16 length ‖ unit`: a 3000-byte message in 400-byte units in order,
# reversed, interleaved with a second peer's message, with a duplicate (overlap), a unit of another
# total, a late unit after completion (stale), and a message left incomplete past the timeout.
frag_dir=fuzz/corpus/frag_reassemble
mkdir -p "$frag_dir"
if command -v python3 >/dev/null 2>&1; then
    python3 -c '
import struct, sys, zlib
out = sys.argv[1]
def units(msg_id, msg, max_unit):
    d = max_unit - 14
    return [struct.pack(">BBIII", 1, 0, msg_id, len(msg), o) + msg[o:o + d] for o in range(0, len(msg), d)]
def rec(peer, dt, u):
    return struct.pack(">BBH", peer, dt, len(u)) + u
m1 = bytes((i * 37 + 11) & 255 for i in range(3000))
m2 = bytes((i * 7) & 255 for i in range(1000))
a, b = units(1, m1, 400), units(2, m2, 300)
streams = [
    [rec(0, 1, u) for u in a],
    [rec(1, 0, u) for u in reversed(a)],
    [rec(p, 1, u) for pair in zip(a, b) for p, u in zip((0, 1), pair)] + [rec(0, 1, u) for u in a[len(b):]],
    [rec(0, 0, a[0]), rec(0, 0, a[0]), rec(0, 0, units(1, m1[:2000], 400)[1])] + [rec(0, 0, u) for u in a[1:]] + [rec(0, 0, a[2])],
    [rec(2, 0, u) for u in a[:3]] + [rec(2, 60, u) for u in b],
]
for s in streams:
    blob = b"".join(s)
    with open("%s/seed-%08x" % (out, zlib.crc32(blob)), "wb") as f:
        f.write(blob)
' "$frag_dir"
else
    echo "seed.sh: python3 not found; frag_reassemble starts from an empty corpus" >&2
fi

# SOME/IP-SD state machines: records `dt | who | length (u16) | message` of
# fuzz_targets/someip_sd.rs carrying scapy 2.6.1-built SD messages (those of the core's unit
# tests in crates/ivnsec-core/src/someip/sd.rs): FindService, SubscribeEventgroup and its stop to
# the server; OfferService, Ack and Nack to the client.
someip_sd_dir=fuzz/corpus/someip_sd
mkdir -p "$someip_sd_dir"
sd_find=ffff8100000000240000000101010200c000000000000010000000001234ffffff000003ffffffff00000000
sd_offer=ffff81000000003c0000000101010200c0000000000000100100002012340001010000030000000000000018000904000a4d00010011772d000904000a4d00010006772e
sd_sub=ffff8100000000300000000201010200c000000000000010060000101234000101000003000000010000000c000904000a4d000200119c40
sd_stop=ffff8100000000300000000301010200c000000000000010060000101234000101000000000000010000000c000904000a4d000200119c40
sd_ack=ffff8100000000240000000201010200c0000000000000100700000012340001010000030000000100000000
sd_nack=ffff8100000000240000000201010200c0000000000000100700000012340001010000000000000100000000
sd_rec() { printf '%02x%02x%04x%s' "$1" "$2" $((${#3} / 2)) "$3"; }
put "$someip_sd_dir" "$(sd_rec 0 0 $sd_find)$(sd_rec 10 0 $sd_sub)$(sd_rec 200 0 $sd_sub)$(sd_rec 50 0 $sd_stop)"
put "$someip_sd_dir" "$(sd_rec 0 5 $sd_offer)$(sd_rec 10 5 $sd_ack)$(sd_rec 160 5 $sd_nack)"
put "$someip_sd_dir" "$(sd_rec 0 5 $sd_nack)$(sd_rec 100 1 $sd_offer)"
put "$someip_sd_dir" "$(sd_rec 1 0 $sd_sub)$(sd_rec 1 2 $sd_sub)$(sd_rec 1 0 $sd_find)$(sd_rec 255 0 $sd_sub)"

# MKA: the MKPDUs of a three-member session on a virtual clock (`mka_peer --session`, an example
# of crates/ivnsec-conformance, built here when missing), once per suite. Member 0 of the session
# is configured and seeded exactly as the participant of fuzz_targets/mka_participant.rs, so the
# other members' frames, replayed in the target's records `dt (x 50 ms) | flags 0 | len | frame`
# behind selector byte 00 (GCM-AES-128) or 01 (XPN-256), carry it through liveness, the SAK
# distribution and rekeys. mkpdu_parse gets every frame as it is.
mkpdu_dir=fuzz/corpus/mkpdu_parse
mka_dir=fuzz/corpus/mka_participant
mkdir -p "$mkpdu_dir" "$mka_dir"
mka_peer=${MKA_PEER:-target/debug/examples/mka_peer}
[ -x "$mka_peer" ] || cargo build --quiet -p ivnsec-conformance --example mka_peer
for sel in 00 01; do
    suite=macsec-gcm-aes-128
    [ "$sel" = 01 ] && suite=macsec-gcm-aes-xpn-256
    session=$("$mka_peer" --session "$suite")
    while read -r _ _ _ hex; do put "$mkpdu_dir" "$hex"; done <<<"$session"
    stream=$sel
    prev=0
    while read -r _ who t hex; do
        [ "$who" = 0 ] && continue
        dt=$(((t - prev) / 50000000))
        ((dt > 255)) && dt=255
        prev=$t
        stream+=$(printf '%02x00%04x%s' "$dt" $((${#hex} / 2)) "$hex")
    done <<<"$session"
    put "$mka_dir" "$stream"
done
# The two inputs on which mka_participant found a rekey falling due in the step that retired the
# old key (or switched the transmit key) left for later: kept as seeds, so every fuzz run (and
# the smoke run of scripts/test) replays them first.
put "$mka_dir" 010000004a0180c2000003020000000011888e030500380310602402000000001100018373622724bb3971d406c6f3000000010080c20166757a7a2d636b6e02d4a59e0b48a8fb9f8cfc250050e9870000004a0180c2000003020000000021888e03050038031060240200000000210001b32789c9bbba70904ca8d7a7000000010080c20166757a7a2d636b6e19260ee0c7a3aa58c261708c9f6b38aa0000006e0180c2000003020000000011888e0305005c0310602402000000001100018373622724bb3971d406c6f3000000020080c20166757a7a2d636b6e02000020e5050b101d169256c15c028900000001b32789c9bbba70904ca8d7a700000001a3a45655a22668cc333f176cec9da9fb0000006e018060000003020000000021888e0305005c031060240200000000210001b32789c9bbba70904ca8d7a7000000020080c20166757a7a2d636b6e02000020e5050b101d169256c15c0289000000018373622724bb3971d406c6f300000001c00378eb1e41d6506af51137e509ae4f0000006e0180c2000003020000000011888e0305005c0310602402000000001100018373622724bb3971d406c6f3000000030080c20166757a7a2d636b6e01000020e5050b101d169256c15c028900000002b32789c9bbba70904ca8d7a700000002d63d77515d884a3c82449105aa38281c0000006e0180c2000003020000000021888e0305005c031060240200000000210001b32789c9bbba70904ca8d7a7000000030080c20166757a7a2d636b6e01000020e5050b101d169256c15c0289000000028373622724bb3971d406c6f300000002b377b8d9f237450b5d12bf704609a3a6000000a60180c2000003020000000011888e030500940310602402000000001100018373622724bb3971d406c6f3000000040080c20166757a7a2d636b6e01000020e5050b101d169256c15c028900000003b32789c9bbba70904ca8d7a70000000303500028e5050b101d169256c15c028900000002000000010000000000000000000000000000000000000000080000080000000000000000da1e56a7193cf6a41893cefd29d42e83000000a60180c2000003020000000021888e03050094031060240200000000210001b32789c9bbba70904ca8d7a7000000040080c20166757a7a2d636b6e01000020e5050b101d169256c15c0289000000038373622724bb3971d406c6f30000000303500028e5050b101d169256c15c02890000000200000001000000000000000000000000000000000000000008000008000000000000000077562520c0bb28d8cbf1f2b8e5e72f23000000a60180c2000003020000000011888e030500940310602402000000001100018373622724bb3971d406c6f3000000050080c20166757a7a2d636b6e01000020e5050b101d169256c15c028900000004b32789c9bbba70904ca8d7a70000000403700028e5050b101d169256c15c02890000000200000001000000000000000000000000000000000000000008000008000000000000000066a15dd593c38ee654790ac0a1be98c1000000a60180c2000003020000000021888e03050094031060240200000000210001b32789c9bbba70904ca8d7a7000000050080c20166757a7a2d636b6e01000020e5050b101d169256c15c0289000000048373622724bb3971d406c6f30000000403700028e5050b101d169256c15c028900000002000000010000000000000000000000000000000000000000080000080000000000000000d3f17e7d626c6932663bfb2d0fb60bba280000a60180c2000003020000000011888e030500940310602402000000001100018373622724bb3971d406c6f3000000060080c20166757a7a2d636b6e01000020e5050b101d169256c15c028900000004b32789c9bbba70904ca8d7a70000000503700028e5050b101d169256c15c02890000000200000001000000000000000000000000000000000000000008000008000000000000000008dea6ae97e646e819d3940da35087f0000000a60180c2000003020000000021888e03050094031060240200000000210001b32789c9bbba70904ca8d7a7000000060080c20166757a7a2d636b6e01000020e5050b101d169256c15c0289000000048373622724bb3971d406c6f30000000503700028e5050b101d169256c15c028900000002000000010000000000000000000000000000000000000000080000080000000000000000dc84d32cadfd5ea260b2af74ea2d5c8e140000a60180c2000003020000000011888e030500940310602402000000001100018373622724bb3971d406c6f3000000070080c20166757a7a2d636b6e01000020e5050b101d169256c15c028900000006b32789c9bbba70904ca8d7a70000000603970028e5050b101d169256c15c02890000000300000001e5050b101d169256c15c028900000002000000010800000800000000000000001c757fc146333153638f378052a1eeff000000a60180c2000003020000000021888e03050094031060240200000000210001b32789c9bbba70904ca8d7a7000000070080c20166757a7a2d636b6e01000020e5050b101d169256c15c0289000000068373622724bb3971d406c6f30000000603970028e5050b101d169256c15c02890000000300000001e5050b101d169256c15c0289000000020000000108000008000000000000000055d454cb388cd5a3a551df1f8d6c438c000000a60180c2000003020000000011888e030500940310602402000000001100018373622724bb3971d406c6f3000000080080c20166757a7a2d636b6e01000020e5050b101d169256c15c028900000007b32789c9bbba70904ca8d7a70000000703b50028e5050b101d169256c15c02890000000300000001e5050b101d169256c15c028900000002000000010800000800000000000000004e49f551e5c43daf93fa5408f11ee509000000a60180c2000003020000000021888e03050094031060240200000000210001b32789c9bbba70904ca8d7a7000000080080c20166757a7a2d636b6e01000020e5050b101d169256c15c0289000000078373622724bb3971d406c6f30000000703b50028e5050b101d169256c15c02890000000300000001e5050b101d169256c15c028900000002000000010800000800000000000000002bdd18be20c8564418692da3c8c6f5ba280000a60180c2000003020000000011888e030500940310602402000000001100018373622724bb3971d406c6f3000000090080c20166757a7a2d636b6e01000020e5050b101d169256c15c028900000007b32789c9bbba70904ca8d7a70000000803b50028e5050b101d169256c15c02890000000300000001e5050b101d169256c15c02890000000200000001080000080000000000000000334e30c3c24924518adf0f71b68d3557000000a60180c2000003020000000021888e03050094031060240200000000210001b32789c9bbba70904ca8d7a7000000090080c20166757a7a2d636b6e01000020e5050b101d169256c15c0289000000078373622724bb3971d406c6f30000000803b50028e5050b101d169256c15c02890000000300000001e5050b101d169256c15c028900000002000000010800000800000000000000001dc2a7aa284514cbf2709e8f83455299140000a60180c2000003020000000011888e030500940310602402000000001100018373622724bb3971d406c6f30000000a0080c20166757a7a2d636b6e01000020e5050b101d169256c15c028900000008b32789c9bbba70904ca8d7a70000000903b00028e5050b101d169256c15c028900000003000000010000000000000000000000000000000000000000080000080000000000000000cebf38658d03e4cfdff4a04be6f7c429000000a60180c2000003020000000021888e03050094031060240200000000210001b32789c9bbba70904ca8d7a70000000a0080c20166757a7a2d636b6e01000020e5050b101d169256c15c0289000000088373622724bb3971d406c6f30000000903b00028e5050b101d169256c15c0289000000030000000100000000000000000000000000000000000000000800000800000000000000003a0de0a287f1b0ce96a32b55025c35f8000000a60180c2000003020000000011888e030500940310602402000000001100018373622724bb3971d406c6f30000000b0080c20166757a7a2d636b6e01000020e5050b101d169256c15c02890000000ab32789c9bbba70904ca8d7a70000000a03db0028e5050b101d169256c15c02890000000400000001e5050b101d169256c15c028900000003000000010800000800000000000000006b1bfb27d29ab3acea2dfaf279306aa7000000a60180c2000003020000000021888e03050094031060240200000000210001b32789c9bbba70904ca8d7a70000000b0080c20166757a7a2d636b6e01000020e5050b101d169256c15c02890000000a8373622724bb3971d406c6f30000000a03db0028e5050b101d169256c15c02890000000400000001e5050b101d169256c15c028900000003000000010800000800000000000000009835bdad628804160f2f8fbec086e150000000a60180c2000003020000000011888e030500940310602402000000001100018373622724bb3971d406c6f30000000c0080c20166757a7a2d636b6e01000020e5050b101d169256c15c02890000000bb32789c9bbba70904ca8d7a70000000b03f90028e5050b101d169256c15c02890000000400000001e5050b101d169256c15c02890000000300000001080000080000000000000000c2e259bb5c7ee2ec876959b6c3728128000000a60180c2000003020000000021888e03050094031060240200000000210001b32789c9bbba70904ca8d7a70000000c0080c20166757a7a2d636b6e01000020e5050b101d169256c15c02890000000b8373622724bb3971d406c6f30000000b03f90028e5050b101d169256c15c02890000000400000001e5050b101d169256c15c02890000000300000001080000080000000000000000c83a72b4e3365400bb110e5b3a12d54c
put "$mka_dir" 000000004a0180c2000003020000000011888e030500380310602402000000001100018373622724bb3971d406c6f3000000010080c20166757a7a2d636b6e02d4a59e0b48a8fb9f8cfc250050e9870000004a0180c2000003020000000021888e03050038031060240200000000210001b32789c9bbba70904ca8d7a7000000010080c20166757a7a2d636b6e19260ee0c7a3aa58c261708c9f6b38aa0000006e0180c2000003020000000011888e0305005c0310602402000000001100018373622724bb3971d406c6f3000000020080c20166757a7a2d636b6e02000020e5050b101d169256c15c028900000001b32789c9bbba70904ca8d7a700000001a3a45655a22668cc333f176cec9da9fb0000006e0180c2000003020000000021888e0305005c031060240200000000210001b32789c9bbba70904ca8d7a7000000020080c20166757a7a2d636b6e02000020e5050b101d169256c15c0289000000018373622724bb3971d406c6f300000001c00378eb1e41d6506af51137e509ae4f0000006e0180c2000003020000000011888e0305005c0310602402000000001100018373622724bb3971d406c6f3000000030080c20166757a7a2d636b6e01000020e5050b101d169256c15c028900000002b32789c9bbba70904ca8d7a700000002d63d77515d884a3c82449105aa38281c0000006e0180c2000003020000000021888e0305005c031060240200000000210001b32789c9bbba70904ca8d7a7000000030080c20166757a7a2d636b6e01000020e5050b101d169256c15c0289000000028373622724bb3971d406c6f300000002b377b8d9f237450b5d12bf704609a3a60000009a0180c2000003020000000011888e030500880310602402000000001100018373622724bb3971d406c6f3000000040080c20166757a7a2d636b6e01000020e5050b101d169256c15c028900000003b32789c9bbba70904da8d7a70000000303500028e5050b101d169256c15c028900000002000000010000000000000000000000000000000000000000b5b44413ec44b928d2ad6c2b90ea7ddd0000009a0180c20000030200000000218872fcfaff77fcefa3240200000000210001b32789c9bbba70904ca8d7a7000000040080c20166757a7a2d636b6e01000020e5050b101d169256c15c0289000000038373622724bb3971d406c6f30000000303500028e5050b101d169256c15c0289000000020000000100000000000000000000000000000000000000004f4cda4c85ae808263ab0581ad6c0b7b0000009a0180c2000003020000000011888e030510880310602402000000001100018373622724bb3971d406c6f3000000050080c20166757a7a2d636b6e01000020e5050b101d169256c15c028900000004b32789c9bbba70904ca8d7a70000000403700028e5050b101d169256c15c028900000002000000010000000000000000000000000000000000000000e716f0973ef193dd4360ff8e02a405b30000009a0180c2000003f8ffffff0021888e03050088031060240200000000210001b32789c9bbba70904ca8d7a7000000050080c20166757a7a2d636b6e01000020e5050b101d169256c15c0289000000048373622724bb3971d406c6f30000000403700028e5050b101d169256c15c028900000002000000010000000000000000000000000000000000000000a41631d816cc2fb96a894e0f2e6b293b2800009a0180c2000003020000000011888e030500880310602402000000001100018373622724bb3971d406c6f3000000060080c20166757a7a2d636b6e01000020e5050b101d169256c15c028900000004b32789c9bbba70904ca8d7a70006000503700028e5050b101d169256c15c02890000000200000001000000000000000000000000000000000000000090ef5e420d9534eb4165a8b1db43770a0000009a0180c2000003020000000021888e03050088031060240200000000210001b32789c9bbba70904ca8d7a7000000060080c20166757a7a2d636b6e01000020e5050b101d169256c15c0289000000048373622724bb3971d406c6f30000000503700028e5050b101d169256c15c028900000002000000010000000000000000000000000000000000000000d5e0168c49b9f734148bb6278326015a1400009a0180c2000003020000000011888e030500880310602402000000001100018373622724bb3971d406c6f3000000070080c20166757a7a2d636b6e01000020e5050b101d169256c15c028900000006b32789c9bbba70904ca8d7a70000000603970028e5050b101d169256c15c02890000000300000001e5050b101d169256c1000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000005c02890000000200000001a588779a0a04d43f355336db9072b1580000009a0180c2000003020000000021888e03050088031060240200000000210001b32789c9bbba70904ca8d7a7000000070080c20166757a7a2d636b6e01000020e5050b101d169256c15c0289000000068373622724bb3971d406c6f30000000603970028e505010000004a0180c2000003020000000011888e030500380310602402000000001100018373622724bb3971d406c6f3000000010080c20166757a7a2d636b6e02d4a59e0b48a8fb9f8cfc250050e9870000004a0180c2000003020000000021888e03050038031060240200000000210001b32789c9bbba70904ca8d7a7000000010080c20166757a7a2d636b0b101d169256c15c02890000000300000001e5050b101d169256c15c02890000000200000001ae98e3c850eadc017b8a1fe2b4d237650000009a0180c2000003020000000011886e

# keyserver_request: the lines of the key server's protocol (docs/keys.md), requests and answers.
ks_dir=fuzz/corpus/keyserver_request
mkdir -p "$ks_dir"
for line in '{"op":"get"}' '{"op":"watch"}' '{"op":"get","segment":"chassis"}' \
    '{"op":"watch","segment":"body"}' '{"ping":true}' '{"ok":false,"error":"not_a_member"}' \
    '{"ok":true,"push":true,"ecu":"ecu1","keys":[{"segment":"chassis","number":2,"ckn":"0102030405060708090a0b0c0d0e0f10","cak":"000102030405060708090a0b0c0d0e0f"}]}'; do
    put "$ks_dir" "$(printf '%s\n' "$line" | od -An -v -tx1 | tr -d ' \n')"
done

# eapol_pae: length-prefixed EAPOL frames between supplicant 02:00:00:00:00:11 and authenticator
# 02:00:00:00:00:aa (an EAPOL-Start, Request/Identity, EAP-TLS Start, Success, Failure, Logoff).
pae_dir=fuzz/corpus/eapol_pae
mkdir -p "$pae_dir"
start=120180c2000003020000000011888e02010000
req_id=170200000000110200000000aa888e020000050101000501
tls_start=180200000000110200000000aa888e02000006010200060d20
success=160200000000110200000000aa888e0200000403030004
failure=160200000000110200000000aa888e0200000404030004
logoff=120200000000aa020000000011888e02020000
put "$pae_dir" "$start$req_id$tls_start$success"
put "$pae_dir" "$start$req_id$failure$logoff"
put "$pae_dir" "$req_id$tls_start$tls_start$success$logoff"
# radius_parse: RFC 2865 7.1's Access-Request and Access-Accept
# (secret "xyzzy5461").
radius_dir=fuzz/corpus/radius_parse
mkdir -p "$radius_dir"
put "$radius_dir" 0200002686fe220e7624ba2a1005f6bf9b55e0b20606000000010f06000000000e06c0a80103
put "$radius_dir" 010000380f403f9473978057bd83d5cb98f4227a01066e656d6f02120dbe708d93d413ce3196e43f782a0aee0406c0a80110050600000003

echo "seed.sh: $macsec_count MACsec frames -> $macsec_dir ($(ls "$macsec_dir" | wc -l) files), $esp_count ESP packets -> $esp_dir ($(ls "$esp_dir" | wc -l) files), $((macsec_bad + esp_bad)) not accepted"
echo "seed.sh: $count frames -> $verify_dir ($(ls "$verify_dir" | wc -l) files), $parse_dir ($(ls "$parse_dir" | wc -l) files), $pcap_dir ($(ls "$pcap_dir" | wc -l) files); $secoc_count SecOC PDUs -> $secoc_dir ($(ls "$secoc_dir" | wc -l) files); someip: $(ls "$someip_parse_dir" | wc -l) parse, $(ls "$someip_verify_dir" | wc -l) verify seeds, $(ls "$someip_sd_dir" | wc -l) SD streams; frag: $(ls "$frag_dir" | wc -l) streams; mka: $(ls "$mkpdu_dir" | wc -l) MKPDUs, $(ls "$mka_dir" | wc -l) sessions; keyserver: $(ls "$ks_dir" | wc -l) lines"
if [ $((macsec_bad + esp_bad)) != 0 ]; then
    echo "seed.sh: some MACsec/ESP seeds are not accepted by the receive path (see above)" >&2
    exit 1
fi
