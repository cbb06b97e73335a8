"""SOME/IP interoperability of `ivnsec someip` (run by scripts/interop-someip).

1. Secured levels on loopback (no root needed): an independent Python implementation of
   docs/wire-someip-sec.md (the `cryptography` package) calls `ivnsec someip serve` for every
   suite at `auth` and `conf` and verifies the answers; tampered, replayed, downgraded (plain
   request to a secured service), wrong-key and wrong-key-id requests get no answer and show up
   in the server's counters under their reasons. Then a Python server answers `ivnsec someip
   call` with a good, a replayed, a plain (downgraded), a wrong-key and a tampered response:
   only the first is accepted, the others are counted.
2. someipy and tshark in a testbed of two network namespaces (root only; skipped otherwise):
   ecu1 runs ivnsec, ecu2 runs someipyd and someipy applications; SD over multicast on the
   testbed's switch. A someipy client finds our service, calls the echo method and subscribes to
   our event; our client finds a someipy service, calls its method and subscribes to its event.
   tshark captures ecu1's interface: SOME/IP (UDP, TCP, TP) and SOME/IP-SD with no malformed
   packets and with the fields we sent.

Prints `N passed, M failed`; exits 1 when a check failed.
Usage: someip_interop.py IVNSEC_BINARY
"""

import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM, ChaCha20Poly1305

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = sys.executable

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


# --- An independent implementation of the secured SOME/IP format -----------------------------

SUITES = {
    "aes128-gcm": (AESGCM, 16),
    "aes256-gcm": (AESGCM, 32),
    "aes128-ccm": (AESCCM, 16),
    "aes256-ccm": (AESCCM, 32),
    "chacha20-poly1305": (ChaCha20Poly1305, 32),
}


def aead(suite, key):
    cls, _ = SUITES[suite]
    return AESCCM(key, tag_length=16) if cls is AESCCM else cls(key)


def header(service, method, client, session, mtype, payload_len, rc=0, iface=1):
    return struct.pack(">HHIHHBBBB", service, method, 8 + payload_len, client, session, 1, iface,
                       mtype, rc)


def nonce(salt, mtype, client, counter):
    if mtype in (0x00, 0x01):
        prefix = bytes([0x01, 0x00]) + struct.pack(">H", client)
    else:
        prefix = bytes([0x02, 0, 0, 0])
    return bytes(a ^ b for a, b in zip(salt, prefix)) + struct.pack(">Q", counter)


def seal(suite, key, salt, key_id, level, service, method, client, session, mtype, counter,
         body, rc=0):
    plen = 9 + len(body) + 16
    h = header(service, method, client, session, mtype, plen, rc) + bytes([key_id]) + struct.pack(
        ">Q", counter)
    a = aead(suite, key)
    n = nonce(salt, mtype, client, counter)
    if level == "conf":
        return h + a.encrypt(n, body, h)
    return h + body + a.encrypt(n, b"", h + body)


def open_msg(suite, key, salt, key_id, level, msg):
    """Verifies a secured message; returns (header fields, counter, body)."""
    service, method, length, client, session, pv, iv, mtype, rc = struct.unpack(">HHIHHBBBB",
                                                                                 msg[:16])
    assert pv == 1 and length == len(msg) - 8, "bad header"
    assert msg[16] == key_id, "bad key id"
    counter = struct.unpack(">Q", msg[17:25])[0]
    a = aead(suite, key)
    n = nonce(salt, mtype, client, counter)
    if level == "conf":
        body = a.decrypt(n, msg[25:], msg[:25])
    else:
        body = msg[25:-16]
        a.decrypt(n, msg[-16:], msg[:-16])
    return (service, method, client, session, mtype, rc), counter, body


def free_port(ip="127.0.0.1", kind=socket.SOCK_DGRAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind((ip, 0))
    p = s.getsockname()[1]
    s.close()
    return p


def run_json(cmd, timeout=60):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    try:
        return p.returncode, json.loads(p.stdout[p.stdout.index("{"):]), p.stderr
    except ValueError:
        return p.returncode, None, p.stdout + p.stderr


# --- 1. Secured levels on loopback ------------------------------------------------------------

KEYS = {s: bytes((i * 7 + 1) & 0xFF for i in range(n)) for s, (_, n) in SUITES.items()}
SALT = bytes.fromhex("0a0b0c0d")


def service_key(suite, level):
    """Each service its own key: the SOME/IP nonce has no service ID, so two services of one
    server under one key and salt would repeat nonces (ivnsec refuses such a configuration)."""
    return KEYS[suite] if level == "conf" else bytes(b ^ 0x5A for b in KEYS[suite])


def secured_loopback(binary, tmp):
    port = free_port()
    services = []
    sid = 0x2000
    for suite in SUITES:
        for level in ("auth", "conf"):
            services.append((sid, suite, level))
            sid += 1
    cfg = os.path.join(tmp, "secured-server.toml")
    with open(cfg, "w") as f:
        f.write(f'[node]\naddress = "127.0.0.1"\nudp_port = {port}\n[sd]\nenabled = false\n')
        for sid, suite, level in services:
            f.write(f'[[service]]\nid = {sid}\nlevel = "{level}"\nsuite = "{suite}"\n'
                    f'key = "{service_key(suite, level).hex()}"\nkey_id = 5\nsalt = "{SALT.hex()}"\n'
                    f'echo_method = 1\nreplay_window = 16\n')
    srv = subprocess.Popen([binary, "someip", "serve", "--config", cfg, "--duration", "8",
                            "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        srv.stderr.readline()  # the "listening" line (stderr: with --json stdout holds the document only)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", 0))
        sock.settimeout(0.5)
        dst = ("127.0.0.1", port)

        def ask(msg):
            sock.sendto(msg, dst)
            try:
                return sock.recv(65535)
            except socket.timeout:
                return None

        counter = 1000
        for sid, suite, level in services:
            counter += 1
            body = f"hello {suite} {level}".encode() * 3
            req = seal(suite, service_key(suite, level), SALT, 5, level, sid, 1, 0x0042, 7, 0x00, counter, body)
            resp = ask(req)
            ok = False
            detail = "no answer"
            if resp is not None:
                try:
                    (s, m, c, sess, mt, rc), ctr, rbody = open_msg(suite, service_key(suite, level), SALT, 5,
                                                                   level, resp)
                    ok = (s, m, c, sess, mt, rc) == (sid, 1, 0x0042, 7, 0x80, 0) and rbody == body
                    detail = f"fields {(s, m, c, sess, mt, rc)} body equal {rbody == body}"
                except Exception as e:  # noqa: BLE001 - report any failure as a check failure
                    detail = repr(e)
            check(f"secured echo {suite}/{level}: Python-made request answered, answer verifies "
                  "in Python", ok, detail)

        # Attacks on one conf service.
        sid, suite, level = services[1]
        key = service_key(suite, level)
        good = seal(suite, key, SALT, 5, level, sid, 1, 0x0043, 1, 0x00, 50, b"genuine")
        check("genuine request answered", ask(good) is not None)
        check("replayed request not answered", ask(good) is None)
        tampered = bytearray(seal(suite, key, SALT, 5, level, sid, 1, 0x0043, 2, 0x00, 51,
                                  b"tampered body"))
        tampered[27] ^= 0x01
        check("tampered request not answered", ask(bytes(tampered)) is None)
        plain = header(sid, 1, 0x0043, 3, 0x00, 2) + b"hi"
        check("downgraded (plain) request to a secured service not answered",
              ask(plain) is None)
        wrong = seal(suite, bytes(len(key)), SALT, 5, level, sid, 1, 0x0043, 4, 0x00, 52, b"x")
        check("wrong-key request not answered", ask(wrong) is None)
        wrong_id = seal(suite, key, SALT, 6, level, sid, 1, 0x0043, 5, 0x00, 53, b"x")
        check("wrong-key-id request not answered", ask(wrong_id) is None)
        sock.close()
        out, err = srv.communicate(timeout=20)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    try:
        stats = json.loads(out[out.index("{"):])
    except ValueError:
        check("server printed its counters", False, out + err)
        return
    d = stats["drops"]
    check("server counted the replay as replay_duplicate", d.get("replay_duplicate") == 1, d)
    check("server counted tampered and wrong-key as bad_tag", d.get("bad_tag") == 2, d)
    check("server counted the downgrade as level_mismatch", d.get("level_mismatch") == 1, d)
    check("server counted the wrong key id as unknown_sa", d.get("unknown_sa") == 1, d)
    check("server answered exactly the genuine requests",
          stats["answered"] == len(services) + 1, stats["answered"])

    # Our client against a Python server that misbehaves.
    sid, suite, level = services[3]  # aes256-gcm conf
    key = service_key(suite, level)
    srv_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv_sock.bind(("127.0.0.1", 0))
    srv_sock.settimeout(10)
    sport = srv_sock.getsockname()[1]
    seen = {"requests_verified": 0}

    def fake_server():
        first = None
        for i in range(5):
            try:
                req, src = srv_sock.recvfrom(65535)
            except socket.timeout:
                return
            (s, m, c, sess, mt, rc), ctr, body = open_msg(suite, key, SALT, 5, level, req)
            seen["requests_verified"] += 1
            if i == 0:
                first = seal(suite, key, SALT, 5, level, s, m, c, sess, 0x80, 9000 + i, body)
                resp = first
            elif i == 1:
                resp = first  # replay of the first response
            elif i == 2:
                # Downgraded: answered as if the service were nosec.
                resp = header(s, m, c, sess, 0x80, 5) + b"plain"
            elif i == 3:
                resp = seal(suite, bytes(32), SALT, 5, level, s, m, c, sess, 0x80, 9000 + i, body)
            else:
                t = bytearray(seal(suite, key, SALT, 5, level, s, m, c, sess, 0x80, 9000 + i,
                                   body))
                t[-1] ^= 0x80
                resp = bytes(t)
            srv_sock.sendto(resp, src)

    th = threading.Thread(target=fake_server, daemon=True)
    th.start()
    ccfg = os.path.join(tmp, "secured-client.toml")
    with open(ccfg, "w") as f:
        f.write('[node]\naddress = "127.0.0.1"\nclient_id = 0x0077\n[sd]\nenabled = false\n')
        f.write(f'[[service]]\nid = {sid}\nlevel = "{level}"\nsuite = "{suite}"\n'
                f'key = "{key.hex()}"\nkey_id = 5\nsalt = "{SALT.hex()}"\n')
    rc, res, err = run_json([binary, "someip", "call", "--config", ccfg, "--service", str(sid),
                             "--method", "1", "--count", "5", "--timeout-ms", "400",
                             "--endpoint", f"127.0.0.1:{sport}", "--json"])
    th.join(timeout=10)
    srv_sock.close()
    check("Python server verified every request of ivnsec someip call",
          seen["requests_verified"] == 5, seen)
    if res is None:
        check("ivnsec someip call printed JSON", False, err)
        return
    d = res["drops"]
    check("client accepted only the genuine Python-made response", res["ok"] == 1, res)
    check("client exit code 1 when calls fail", rc == 1, rc)
    check("client counted the replayed response", d.get("replay_duplicate") == 1, d)
    check("client counted the downgraded (nosec) response as level_mismatch",
          d.get("level_mismatch") == 1, d)
    check("client counted wrong-key and tampered responses as bad_tag", d.get("bad_tag") == 2, d)


# --- 2. someipy and tshark in network namespaces ----------------------------------------------

class Procs:
    def __init__(self):
        self.procs = []

    def start(self, cmd, **kw):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def nsx(ns, *cmd):
    return ["ip", "netns", "exec", ns, *cmd]


def wait_line(p, needle, timeout, stream="stdout"):
    """Reads p's stdout (or stderr) until a line contains needle; returns the line or None."""
    end = time.monotonic() + timeout
    result = {}

    def reader():
        for line in getattr(p, stream):
            if needle in line:
                result["line"] = line
                return

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    t.join(max(0.0, end - time.monotonic()))
    return result.get("line")


def namespaces(binary, tmp):
    if os.geteuid() != 0:
        print("SKIP someipy/tshark namespace tests: not root (network namespaces need "
              "CAP_SYS_ADMIN; run as root)")
        return
    for tool in ("ip", "tshark"):
        if shutil.which(tool) is None:
            check(f"{tool} available", False, "install it (scripts/interop-someip does)")
            return
    env = dict(os.environ, IVNSEC_STATE_DIR=os.path.join(tmp, "state"))
    up = subprocess.run([binary, "testbed", "up", "--topology", "pair", "--json"], env=env,
                        capture_output=True, text=True, timeout=60)
    if up.returncode != 0:
        check("testbed up", False, up.stderr)
        return
    prefix = json.loads(up.stdout)["prefix"]
    ns1, ns2 = f"{prefix}-ecu1", f"{prefix}-ecu2"
    procs = Procs()
    try:
        _namespaces(binary, tmp, ns1, ns2, procs)
    finally:
        procs.stop_all()
        subprocess.run([binary, "testbed", "down", "--testbed", prefix], env=env,
                       capture_output=True, timeout=60)


def _namespaces(binary, tmp, ns1, ns2, procs):
    ip1, ip2 = "10.77.0.1", "10.77.0.2"
    for ns in (ns1, ns2):
        subprocess.run(nsx(ns, "ip", "link", "set", "lo", "up"), check=True)
        subprocess.run(nsx(ns, "ip", "route", "add", "224.0.0.0/4", "dev", "eth0"), check=True)
    pcap = os.path.join(tmp, "someip.pcapng")
    cap = procs.start(nsx(ns1, "tshark", "-i", "eth0", "-w", pcap, "-q"))
    time.sleep(2.0)  # tshark needs a moment before it captures

    sock = os.path.join(tmp, "someipyd.sock")
    dcfg = os.path.join(tmp, "someipyd.json")
    with open(dcfg, "w") as f:
        json.dump({"interface": ip2, "socket_path": sock, "sd_address": "224.224.224.245",
                   "sd_port": 30490, "log_level": "INFO",
                   "log_path": os.path.join(tmp, "someipyd.log")}, f)
    procs.start(nsx(ns2, PY, "-m", "someipy.someipyd", "--config", dcfg))
    for _ in range(100):
        if os.path.exists(sock):
            break
        time.sleep(0.1)
    check("someipyd started in ecu2", os.path.exists(sock))

    # Our server in ecu1: nosec service with echo method and event.
    scfg = os.path.join(tmp, "ns-server.toml")
    with open(scfg, "w") as f:
        f.write(f'[node]\naddress = "{ip1}"\nudp_port = 30509\ntcp_port = 30510\n'
                '[sd]\nmulticast = "224.224.224.245"\noffer_interval_ms = 500\n'
                '[[service]]\nid = 0x1234\nlevel = "nosec"\necho_method = 1\nevent = 0x8001\n'
                'eventgroup = 1\nevent_period_ms = 100\nevent_payload_size = 64\n')
    srv = procs.start(nsx(ns1, binary, "someip", "serve", "--config", scfg, "--duration", "14",
                          "--json"))
    check("ivnsec someip serve started in ecu1",
          wait_line(srv, "ivnsec someip serve", 10, "stderr") is not None)

    # someipy client in ecu2 -> our service.
    app = os.path.join(HERE, "someipy_apps.py")
    cl = subprocess.run(nsx(ns2, PY, app, "client", "--socket", sock, "--ip", ip2, "--port",
                            "30700", "--service", "0x1234", "--method", "1", "--event", "0x8001",
                            "--eventgroup", "1", "--count", "5", "--size", "40", "--events", "5"),
                        capture_output=True, text=True, timeout=60)
    res = {}
    for line in cl.stdout.splitlines():
        if line.startswith('{"role"'):
            res = json.loads(line)
    check("someipy client found our service via SD (multicast offer)", res.get("found"),
          cl.stdout + cl.stderr[-2000:])
    check("someipy client called our echo method 5 times", res.get("ok") == 5, res)
    check("someipy client subscribed and received our events (0x8001, 64 B)",
          res.get("events", 0) >= 5 and res.get("event_ids") == [0x8001]
          and res.get("event_sizes") == [64], res)

    # Our client in ecu2 -> our server in ecu1 over TCP and over UDP with SOME/IP-TP (for
    # tshark; SD is not needed with --endpoint).
    ccfg2 = os.path.join(tmp, "ns-client2.toml")
    with open(ccfg2, "w") as f:
        f.write(f'[node]\naddress = "{ip2}"\n[sd]\nenabled = false\n'
                '[[service]]\nid = 0x1234\nlevel = "nosec"\n')
    for extra, what in ((["--endpoint", f"{ip1}:30510", "--tcp", "--payload-size", "2000"],
                         "TCP"),
                        (["--endpoint", f"{ip1}:30509", "--payload-size", "5000"],
                         "UDP with SOME/IP-TP")):
        rc, r, err = run_json(nsx(ns2, binary, "someip", "call", "--config", ccfg2, "--service",
                                  "0x1234", "--method", "1", "--count", "3", "--json", *extra))
        check(f"ivnsec call over {what} between namespaces", rc == 0 and r and r["ok"] == 3,
              err)

    out, err = srv.communicate(timeout=30)
    try:
        st = json.loads(out[out.index("{"):])
    except ValueError:
        st = {}
    check("our server saw the someipy subscription and sent events",
          st.get("events_sent", 0) >= 5, st or err)
    check("our server saw SD from someipy", st.get("sd_received", 0) >= 1, st)
    check("our server dropped nothing", st.get("drops") == {}, st.get("drops"))

    # someipy server in ecu2; our client in ecu1 finds it via SD, calls and subscribes.
    ssrv = procs.start(nsx(ns2, PY, app, "server", "--socket", sock, "--ip", ip2, "--port",
                           "30600", "--service", "0x4321", "--method", "1", "--event", "0x8002",
                           "--eventgroup", "1", "--duration", "15"))
    check("someipy server offering 0x4321", wait_line(ssrv, "READY", 15) is not None)
    ccfg = os.path.join(tmp, "ns-client.toml")
    with open(ccfg, "w") as f:
        f.write(f'[node]\naddress = "{ip1}"\nudp_port = 30800\n'
                '[sd]\nmulticast = "224.224.224.245"\nfind_timeout_ms = 8000\n'
                '[[service]]\nid = 0x4321\nlevel = "nosec"\n'
                '[[service]]\nid = 0x4322\nlevel = "nosec"\nevent = 0x8002\neventgroup = 1\n'
                'event_period_ms = 100\n')
    rc, r, err = run_json(nsx(ns1, binary, "someip", "call", "--config", ccfg, "--service",
                              "0x4321", "--method", "1", "--count", "5", "--payload-size", "48",
                              "--timeout-ms", "2000", "--json"))
    check("our client found the someipy service via SD", r is not None and r.get("endpoint") ==
          f"{ip2}:30600", err if r is None else r.get("endpoint"))
    check("our client called the someipy echo method 5 times", r is not None and r["ok"] == 5
          and rc == 0, r)
    rc, r, err = run_json(nsx(ns1, binary, "someip", "call", "--config", ccfg, "--service",
                              "0x4322", "--method", "1", "--count", "0", "--subscribe", "3",
                              "--json"))
    ev = (r or {}).get("events") or {}
    sub_ok = bool(ev.get("acked")) and ev.get("received", 0) >= 3 and rc == 0
    check("our client subscribed to the someipy event (SD ack) and received 3", sub_ok,
          ev or err)
    if not sub_ok:
        with open(os.path.join(tmp, "someipyd.log")) as f:
            lines = [x for x in f if "ubscri" in x or "rror" in x]
        print("".join(lines[-20:]))
    try:
        os.killpg(ssrv.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass

    time.sleep(1.0)
    os.killpg(cap.pid, signal.SIGINT)
    try:
        cap.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(cap.pid, signal.SIGKILL)
    tshark_checks(pcap)


def tshark_checks(pcap):
    decode = []
    for p in (30490, 30509, 30600, 30700, 30800):
        decode += ["-d", f"udp.port=={p},someip"]
    decode += ["-d", "tcp.port==30510,someip"]
    base = ["tshark", "-r", pcap, "-n"] + decode

    def fields(flt, *fs):
        cmd = base + ["-Y", flt, "-T", "fields", "-E", "separator=,"]
        for f in fs:
            cmd += ["-e", f]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
        return [line.split(",") for line in out.splitlines() if line.strip()]

    malformed = fields("_ws.malformed || _ws.expert.severity == error", "frame.number",
                       "_ws.col.Info")
    check("tshark: no malformed SOME/IP or SOME/IP-SD packet", not malformed, malformed[:5])
    ours = fields("someip && ip.src == 10.77.0.1 && !someipsd", "someip.serviceid",
                  "someip.methodid", "someip.messagetype")
    seen = {tuple(x) for x in ours}
    check("tshark: our RESPONSE 0x1234/0x0001 dissected",
          ("0x1234", "0x0001", "0x80") in seen, sorted(seen)[:10])
    check("tshark: our NOTIFICATION 0x1234/0x8001 dissected",
          ("0x1234", "0x8001", "0x02") in seen, sorted(seen)[:10])
    check("tshark: our REQUEST 0x4321/0x0001 dissected",
          ("0x4321", "0x0001", "0x00") in seen, sorted(seen)[:10])
    tp = fields("someip.messagetype.tp == 1", "someip.tp.offset", "someip.tp.flags.more_segments")
    check("tshark: our SOME/IP-TP segments dissected (offsets, more-segments flag)",
          len(tp) >= 6 and any(x[1] in ("0", "False") for x in tp), tp[:4])
    tcp = fields("tcp && someip && ip.src == 10.77.0.1", "someip.serviceid", "someip.length")
    check("tshark: our SOME/IP over TCP dissected with Length 2008",
          ["0x1234", "2008"] in tcp, tcp[:4])
    sd = fields("someipsd && ip.src == 10.77.0.1", "someipsd.entry.type")
    types = set()
    for row in sd:
        types.update(row)
    check("tshark: our SD OfferService, FindService, SubscribeEventgroup(Ack) dissected",
          {"0x01", "0x00", "0x06", "0x07"} <= types, sorted(types))
    opts = fields("someipsd && ip.src == 10.77.0.1 && someipsd.option.type == 0x04",
                  "someipsd.option.ipv4address", "someipsd.option.port")
    flat = {tuple(x) for x in opts}
    check("tshark: our IPv4 endpoint options carry 10.77.0.1:30509",
          any("10.77.0.1" in x and "30509" in ",".join(x) for x in flat), sorted(flat)[:5])


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="ivnsec-someip-")
    os.chmod(tmp, 0o755)
    try:
        secured_loopback(binary, tmp)
        namespaces(binary, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
