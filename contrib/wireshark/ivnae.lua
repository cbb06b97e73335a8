-- IVN-AE (EtherType 0x88B5): Wireshark dissector for the authenticated raw-Ethernet format of
-- ivnsec, versions 1 and 2 (docs/wire-ivnae.md; version 2 folds the key id into the nonce, the
-- header layout is the same). Shows version, suite, key id, flags, sequence number, body and tag
-- (its length per the suite table; HMAC suites truncated with --tag-len: set the preference).
-- Install: copy into Wireshark's personal Lua plugins folder (Help > About > Folders), e.g.
--   mkdir -p ~/.local/lib/wireshark/plugins && cp ivnae.lua ~/.local/lib/wireshark/plugins/
-- or run `tshark -X lua_script:ivnae.lua -r capture.pcap`.

local ivnae = Proto("ivnae", "IVN-AE Authenticated Ethernet")

-- Suite id -> name, tag length (bytes). HMAC suites 0x30 + h, Encrypt-then-MAC suites
-- 0x40 + 0x10*k + 0x08*m + h (docs/wire-ivnae.md section 2).
local suites = {
    [0x00] = { "plain", 0 },
    [0x01] = { "crc32", 4 },
    [0x10] = { "aes128-gcm", 16 },
    [0x11] = { "aes256-gcm", 16 },
    [0x12] = { "aes128-ccm", 16 },
    [0x13] = { "aes256-ccm", 16 },
    [0x14] = { "chacha20-poly1305", 16 },
}
local hashes = { { "md5", 16 }, { "sha1", 20 }, { "sha224", 28 }, { "sha256", 32 }, { "sha3-256", 32 } }
local aes = { "aes128", "aes192", "aes256" }
local modes = { "cbc", "ctr" }
for h, hash in ipairs(hashes) do
    suites[0x30 + h - 1] = { "hmac-" .. hash[1], hash[2] }
    for k, a in ipairs(aes) do
        for m, mode in ipairs(modes) do
            suites[0x40 + 0x10 * (k - 1) + 0x08 * (m - 1) + h - 1] =
                { a .. "-" .. mode .. "-hmac-" .. hash[1], hash[2] }
        end
    end
end
local suite_names = {}
for id, s in pairs(suites) do suite_names[id] = s[1] end

local f = ivnae.fields
f.version = ProtoField.uint8("ivnae.version", "Version", base.DEC)
f.suite = ProtoField.uint8("ivnae.suite", "Suite", base.HEX, suite_names)
f.key_id = ProtoField.uint8("ivnae.key_id", "Key ID", base.DEC)
f.flags = ProtoField.uint8("ivnae.flags", "Flags", base.HEX)
f.conf = ProtoField.bool("ivnae.flags.conf", "Confidentiality", 8, { "Encrypted body", "Body in clear" }, 0x01)
f.reserved = ProtoField.uint8("ivnae.flags.reserved", "Reserved", base.HEX, nil, 0xFE)
f.seq = ProtoField.uint64("ivnae.seq", "Sequence number", base.DEC)
f.body = ProtoField.bytes("ivnae.body", "Body")
f.body_len = ProtoField.uint32("ivnae.body_len", "Body length", base.DEC)
f.inner_type = ProtoField.uint16("ivnae.inner_ethertype", "Inner EtherType", base.HEX)
f.tag = ProtoField.bytes("ivnae.tag", "Tag")
f.tag_len = ProtoField.uint32("ivnae.tag_len", "Tag length", base.DEC)

local e_version = ProtoExpert.new("ivnae.version.unknown", "Unknown IVN-AE version", expert.group.PROTOCOL, expert.severity.WARN)
local e_suite = ProtoExpert.new("ivnae.suite.unknown", "Unassigned suite id (receivers drop it)", expert.group.PROTOCOL, expert.severity.WARN)
local e_short = ProtoExpert.new("ivnae.short", "Frame shorter than header and tag", expert.group.MALFORMED, expert.severity.ERROR)
ivnae.experts = { e_version, e_suite, e_short }

ivnae.prefs.tag_len = Pref.uint("Tag length override", 0,
    "Bytes of tag for HMAC suites truncated with --tag-len (0: the suite's full length)")

local HEADER = 12 -- after the Ethernet header: version, suite, key id, flags, sequence number

function ivnae.dissector(buf, pinfo, tree)
    local len = buf:len()
    if len < HEADER then return 0 end
    pinfo.cols.protocol = "IVN-AE"
    local t = tree:add(ivnae, buf(), "IVN-AE Authenticated Ethernet")
    local version = buf(0, 1):uint()
    local vi = t:add(f.version, buf(0, 1))
    if version ~= 1 and version ~= 2 then
        vi:add_proto_expert_info(e_version)
    elseif version == 2 then
        vi:append_text(" (key id folded into the nonce)")
    end
    local suite_id = buf(1, 1):uint()
    local si = t:add(f.suite, buf(1, 1))
    local suite = suites[suite_id]
    if not suite then si:add_proto_expert_info(e_suite) end
    t:add(f.key_id, buf(2, 1))
    local ft = t:add(f.flags, buf(3, 1))
    ft:add(f.conf, buf(3, 1))
    ft:add(f.reserved, buf(3, 1))
    t:add(f.seq, buf(4, 8))
    local tag_len = suite and suite[2] or 0
    if suite and ivnae.prefs.tag_len > 0 and suite_id >= 0x30 then tag_len = ivnae.prefs.tag_len end
    local body_len = len - HEADER - tag_len
    if body_len < 0 then
        t:add_proto_expert_info(e_short)
        return len
    end
    local conf = bit.band(buf(3, 1):uint(), 0x01) ~= 0
    if body_len > 0 then
        local b = t:add(f.body, buf(HEADER, body_len))
        if not conf and body_len >= 2 then b:add(f.inner_type, buf(HEADER, 2)) end
    end
    t:add(f.body_len, body_len):set_generated()
    if tag_len > 0 then t:add(f.tag, buf(HEADER + body_len, tag_len)) end
    t:add(f.tag_len, tag_len):set_generated()
    pinfo.cols.info = string.format("IVN-AE v%d %s key %d seq %s%s", version,
        suite and suite[1] or string.format("suite 0x%02x", suite_id), buf(2, 1):uint(),
        tostring(buf(4, 8):uint64()), conf and " conf" or "")
    -- Plain bodies: hand the inner frame on by its EtherType.
    if not conf and body_len > 2 then
        local et = DissectorTable.get("ethertype"):get_dissector(buf(HEADER, 2):uint())
        if et then et:call(buf(HEADER + 2, body_len - 2):tvb(), pinfo, tree) end
    end
    return len
end

DissectorTable.get("ethertype"):add(0x88B5, ivnae)
