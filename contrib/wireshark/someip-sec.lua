-- Secured SOME/IP (ivnsec, docs/wire-someip-sec.md): the SOME/IP header, then key id, counter,
-- body and the 16-byte AEAD tag of services at level auth or conf. Registered on the UDP and
-- TCP ports of ivnsec's SOME/IP configs (30509/udp, 30510/tcp by default; change them in
-- Preferences > Protocols > SOMEIPSEC, or use Decode As... > SOMEIPSEC on other ports).
-- Which services are secured is configuration, not on the wire: the "Secured services"
-- preference lists them (hex service ids, comma separated; empty: every message long enough).
-- Install: copy into Wireshark's personal Lua plugins folder (Help > About > Folders), e.g.
--   mkdir -p ~/.local/lib/wireshark/plugins && cp someip-sec.lua ~/.local/lib/wireshark/plugins/
-- or run `tshark -X lua_script:someip-sec.lua -r capture.pcap`.

local p = Proto("someipsec", "Secured SOME/IP")

local msg_types = {
    [0x00] = "REQUEST", [0x01] = "REQUEST_NO_RETURN", [0x02] = "NOTIFICATION",
    [0x80] = "RESPONSE", [0x81] = "ERROR",
    [0x20] = "TP_REQUEST", [0x21] = "TP_REQUEST_NO_RETURN", [0x22] = "TP_NOTIFICATION",
    [0xA0] = "TP_RESPONSE", [0xA1] = "TP_ERROR",
}

local f = p.fields
f.service = ProtoField.uint16("someipsec.service", "Service ID", base.HEX)
f.method = ProtoField.uint16("someipsec.method", "Method ID", base.HEX)
f.length = ProtoField.uint32("someipsec.length", "Length", base.DEC)
f.client = ProtoField.uint16("someipsec.client", "Client ID", base.HEX)
f.session = ProtoField.uint16("someipsec.session", "Session ID", base.HEX)
f.proto_ver = ProtoField.uint8("someipsec.protocol_version", "Protocol version", base.DEC)
f.iface_ver = ProtoField.uint8("someipsec.interface_version", "Interface version", base.DEC)
f.msg_type = ProtoField.uint8("someipsec.message_type", "Message type", base.HEX, msg_types)
f.ret = ProtoField.uint8("someipsec.return_code", "Return code", base.HEX)
f.secured = ProtoField.bool("someipsec.secured", "Secured (auth/conf)")
f.key_id = ProtoField.uint8("someipsec.key_id", "Key ID", base.DEC)
f.counter = ProtoField.uint64("someipsec.counter", "Counter", base.DEC)
f.body = ProtoField.bytes("someipsec.body", "Body")
f.body_len = ProtoField.uint32("someipsec.body_len", "Body length", base.DEC)
f.tag = ProtoField.bytes("someipsec.tag", "Tag")

p.prefs.udp_port = Pref.uint("UDP port", 30509, "UDP port of the secured SOME/IP services")
p.prefs.tcp_port = Pref.uint("TCP port", 30510, "TCP port of the secured SOME/IP services")
p.prefs.secured = Pref.string("Secured services", "",
    "Service ids (hex, comma separated) at level auth or conf; empty: every message of 33+ bytes after the header")

local HDR, SEC, TAG = 16, 9, 16

local function secured_set()
    local s = {}
    local any = false
    for id in string.gmatch(p.prefs.secured, "[^,%s]+") do
        s[tonumber(id, 16) or -1] = true
        any = true
    end
    return any and s or nil
end

-- One SOME/IP message at the start of buf; returns its length.
local function one(buf, pinfo, tree)
    local length = buf(4, 4):uint()
    local total = 8 + length
    local t = tree:add(p, buf(0, total), "Secured SOME/IP")
    local service = buf(0, 2):uint()
    t:add(f.service, buf(0, 2))
    t:add(f.method, buf(2, 2))
    t:add(f.length, buf(4, 4))
    t:add(f.client, buf(8, 2))
    t:add(f.session, buf(10, 2))
    t:add(f.proto_ver, buf(12, 1))
    t:add(f.iface_ver, buf(13, 1))
    t:add(f.msg_type, buf(14, 1))
    t:add(f.ret, buf(15, 1))
    local set = secured_set()
    local n = total - HDR
    local secured = n >= SEC + TAG and (set == nil or set[service] == true)
    t:add(f.secured, secured):set_generated()
    if secured then
        local body = n - SEC - TAG
        t:add(f.key_id, buf(HDR, 1))
        t:add(f.counter, buf(HDR + 1, 8))
        if body > 0 then t:add(f.body, buf(HDR + SEC, body)) end
        t:add(f.body_len, body):set_generated()
        t:add(f.tag, buf(HDR + SEC + body, TAG))
        pinfo.cols.info = string.format("SOME/IP-sec %04x.%04x key %d counter %s %s",
            service, buf(2, 2):uint(), buf(HDR, 1):uint(), tostring(buf(HDR + 1, 8):uint64()),
            msg_types[buf(14, 1):uint()] or "")
    else
        if n > 0 then t:add(f.body, buf(HDR, n)) end
        t:add(f.body_len, n):set_generated()
        pinfo.cols.info = string.format("SOME/IP %04x.%04x (not secured)", service, buf(2, 2):uint())
    end
    return total
end

local function pdu_len(buf, pinfo, offset)
    return 8 + buf(offset + 4, 4):uint()
end

local function pdu(buf, pinfo, tree)
    pinfo.cols.protocol = "SOMEIPSEC"
    return one(buf, pinfo, tree)
end

function p.dissector(buf, pinfo, tree)
    pinfo.cols.protocol = "SOMEIPSEC"
    if pinfo.port_type == 2 then -- TCP: messages may span or share segments
        dissect_tcp_pdus(buf, tree, HDR, pdu_len, pdu)
        return buf:len()
    end
    local off = 0
    while buf:len() - off >= HDR do
        local total = 8 + buf(off + 4, 4):uint()
        if total < HDR or off + total > buf:len() then break end
        one(buf(off, total):tvb(), pinfo, tree)
        off = off + total
    end
    return off
end

local udp_port, tcp_port = 0, 0
function p.init()
    local udp, tcp = DissectorTable.get("udp.port"), DissectorTable.get("tcp.port")
    if udp_port ~= 0 then udp:remove(udp_port, p) end
    if tcp_port ~= 0 then tcp:remove(tcp_port, p) end
    udp_port, tcp_port = p.prefs.udp_port, p.prefs.tcp_port
    if udp_port ~= 0 then udp:add(udp_port, p) end
    if tcp_port ~= 0 then tcp:add(tcp_port, p) end
end
