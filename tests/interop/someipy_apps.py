"""someipy applications for the SOME/IP interoperability test (tests/interop/someip_interop.py).

    someipy_apps.py server --socket S --ip IP --port P --service N --method M --event E \
                           --eventgroup G --duration SECS
        Offers a service with an echo method (at IP:P) and a service --event-service with a
        10 Hz event (at IP:P+1) via a running someipyd.
    someipy_apps.py client --socket S --ip IP --port P --service N --method M --event E \
                           --eventgroup G --count C --size B --events K
        Finds the service (SD), calls the method C times with B-byte payloads, subscribes to the
        eventgroup and waits for K events; prints one JSON line with the outcome.

Both talk to someipyd over its Unix socket (someipy 2.x runs SD and the sockets in the daemon).
"""

import argparse
import asyncio
import json
import sys
import time

from someipy import (
    ClientServiceInstance,
    Event,
    EventGroup,
    MessageType,
    Method,
    MethodResult,
    ReturnCode,
    ServerServiceInstance,
    ServiceBuilder,
    TransportLayerProtocol,
    connect_to_someipy_daemon,
)

UDP = TransportLayerProtocol.UDP


def build_service(a, handler=None, service=None, method=True):
    eg = EventGroup(id=a.eventgroup, events=[Event(id=a.event, protocol=UDP)])
    b = ServiceBuilder().with_service_id(service or a.service).with_major_version(1)
    if method:
        b = b.with_method(Method(id=a.method, protocol=UDP, method_handler=handler))
    svc = b.with_eventgroup(eg).build()
    return svc, eg


async def server(a):
    daemon = await connect_to_someipy_daemon({"socket_path": a.socket})
    calls = 0

    def echo(payload, addr):
        nonlocal calls
        calls += 1
        r = MethodResult()
        r.message_type = MessageType.RESPONSE
        r.return_code = ReturnCode.E_OK
        r.payload = payload
        return r

    svc, _ = build_service(a, echo)
    inst = ServerServiceInstance(
        daemon, svc, instance_id=1, endpoint_ip=a.ip, endpoint_port=a.port, ttl=5,
        cyclic_offer_delay_ms=500,
    )
    await inst.start_offer()
    # someipyd 2.1.2 cannot take an external subscription to a service that also has methods
    # (it hashes its offer record, which holds unhashable Method objects, and the handler dies
    # before the SubscribeEventgroupAck), so the event lives in a second, method-less service.
    esvc, eg = build_service(a, service=a.event_service, method=False)
    einst = ServerServiceInstance(
        daemon, esvc, instance_id=1, endpoint_ip=a.ip, endpoint_port=a.port + 1, ttl=5,
        cyclic_offer_delay_ms=500,
    )
    await einst.start_offer()
    print("READY", flush=True)
    end = time.monotonic() + a.duration
    seq = 0
    while time.monotonic() < end:
        seq += 1
        einst.send_event(eg.id, a.event, seq.to_bytes(8, "big") + bytes(24))
        await asyncio.sleep(0.1)
    await inst.stop_offer()
    await einst.stop_offer()
    print(json.dumps({"role": "server", "calls": calls, "events_sent": seq}), flush=True)
    await daemon.disconnect_from_daemon()


async def client(a):
    daemon = await connect_to_someipy_daemon({"socket_path": a.socket})
    svc, eg = build_service(a)
    inst = ClientServiceInstance(
        daemon, svc, instance_id=1, endpoint_ip=a.ip, endpoint_port=a.port, client_id=0x55,
    )
    events = []
    inst.register_callback(lambda event_id, payload: events.append((event_id, len(payload))))
    inst.subscribe_eventgroup(eg, 5)
    out = {"role": "client", "found": False, "calls": 0, "ok": 0, "events": 0}
    deadline = time.monotonic() + a.find_timeout
    while time.monotonic() < deadline:
        if await inst.is_available():
            out["found"] = True
            break
        await asyncio.sleep(0.2)
    if out["found"]:
        for i in range(a.count):
            payload = bytes([(i + k) & 0xFF for k in range(a.size)])
            out["calls"] += 1
            try:
                r = await inst.call_method(a.method, payload)
            except Exception as e:  # a timeout or a not-found: counted, not fatal
                out.setdefault("errors", []).append(repr(e))
                continue
            if (r.message_type == MessageType.RESPONSE and r.return_code == ReturnCode.E_OK
                    and r.payload == payload):
                out["ok"] += 1
        end = time.monotonic() + a.event_timeout
        while len(events) < a.events and time.monotonic() < end:
            await asyncio.sleep(0.05)
    out["events"] = len(events)
    out["event_ids"] = sorted({e for e, _ in events})
    out["event_sizes"] = sorted({n for _, n in events})
    print(json.dumps(out), flush=True)
    await daemon.disconnect_from_daemon()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("role", choices=["server", "client"])
    p.add_argument("--socket", required=True)
    p.add_argument("--ip", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--service", type=lambda s: int(s, 0), required=True)
    p.add_argument("--method", type=lambda s: int(s, 0), default=1)
    p.add_argument("--event-service", type=lambda s: int(s, 0), default=0x4322)
    p.add_argument("--event", type=lambda s: int(s, 0), default=0x8001)
    p.add_argument("--eventgroup", type=lambda s: int(s, 0), default=1)
    p.add_argument("--duration", type=float, default=20)
    p.add_argument("--count", type=int, default=5)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--events", type=int, default=3)
    p.add_argument("--find-timeout", type=float, default=10)
    p.add_argument("--event-timeout", type=float, default=5)
    a = p.parse_args()
    asyncio.run(server(a) if a.role == "server" else client(a))


if __name__ == "__main__":
    sys.exit(main())
