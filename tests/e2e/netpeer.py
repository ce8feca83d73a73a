#!/usr/bin/python3
"""Traffic endpoints for the e2e tests, run inside the lab's namespaces.

  netpeer.py tcp-echo-server ADDR PORT
  netpeer.py udp-echo-server ADDR PORT
  netpeer.py tcp-echo-client ADDR PORT BYTES          -> JSON {sport, sent, ok, seconds}
  netpeer.py udp-echo-client ADDR PORT COUNT [SPORT]  -> JSON {sport, sent, received, intact}
  netpeer.py tcp-stream ADDR PORT SECONDS [RATE]      -> JSON {sport, bytes, ok, max_stall, ...}
      a long-lived stream: writes RATE bytes/s (default 2 MB/s) of a known
      pattern to an echo server for SECONDS, checks every echoed byte, reports
      the longest time without echoed data (max_stall)
  netpeer.py tcp-streams ADDR PORT COUNT SECONDS RATE -> JSON lines {event: connected, sports}
      then {event: done, streams: [{sport, sent, received, ok, max_stall}]}: COUNT
      streams at once (one thread, non-blocking), each as tcp-stream at RATE bytes/s
  netpeer.py tcp-watch ADDR PORT SECONDS RATE LIMIT [reconnect|reconnect-retry]
      -> JSON lines {event: connected, sport, t}
      then {event: done, sent, received, complete, intact, last_rx, max_stall, error, error_at,
      tcp_info, reconnect}: a stream as tcp-stream that never blocks and never waits past LIMIT
      seconds from its start, for a stream that may break: the time of the last echoed byte, the
      error that ended it (e.g. ECONNRESET) and when, and the kernel's view of the
      connection at the end (TCP_INFO: state, retransmits, backoff, rto_ms, unacked).
      With `reconnect`, a client that gets an error opens a new connection as an
      application would: reconnect {sport, connected_at, first_byte_at} (its first
      byte echoed), or {error} when that fails; it holds it open 2 s (null: no error);
      with `reconnect-retry`, a new connection that fails is tried again, 3 tries in all
      ({..., attempts, errors}: the earlier tries' errors)
  netpeer.py tcp-until-reset ADDR PORT SECONDS        -> JSON lines {event: connected, sport},
      {event: reset, at, error} (epoch s), {event: reconnected, sport, at, echoed_at}, {event: done}:
      a byte every 20 ms on one connection, each echo awaited, until the connection
      fails (an RST, or no echo for SECONDS) or SECONDS pass (error "no failure");
      then a new connection, whose first echo is timed
  netpeer.py ping ADDR COUNT                          -> JSON {sent, received}
  netpeer.py frag-client ADDR PORT SIZE ORDER COUNT   -> JSON {sport, sent, fragments, received, intact}
      COUNT UDP datagrams of SIZE bytes to an echo server, each leaving this host
      as fragments (MTU 1500): ORDER kernel (the kernel fragments, in order),
      first-first (the first fragment, then the others last to first) or
      last-first (every fragment, last to first); built here and sent on a
      raw socket. IPv4 or IPv6 by ADDR.
  netpeer.py wait-ready tcp|udp ADDR PORT TIMEOUT     exit 0 once an echo server there answers
      (run beside the server: a TCP connect, or a UDP datagram echoed back)
ADDR may be IPv6 for the UDP commands and frag-client.
NETPEER_SRC=ADDR (environment): the TCP clients connect from this source address
(a host with two, e.g. the lab's two tenants with --listeners 2).
"""
import json
import os
import socket
import sys
import threading
import time


def pattern(offset, n):
    # Deterministic bytes: position-dependent so reordering or loss is caught.
    base = bytes((i * 7 + 3) % 251 for i in range(251))
    start = offset % 251
    out = bytearray()
    while len(out) < n:
        out += base[start:]
        start = 0
    return bytes(out[:n])


def connect(addr, port, timeout):
    """A TCP connection to addr:port, from NETPEER_SRC when set."""
    src = os.environ.get("NETPEER_SRC")
    return socket.create_connection((addr, port), timeout=timeout, source_address=(src, 0) if src else None)


def tcp_echo_server(addr, port):
    s = socket.socket(family(addr), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(64)

    def serve(c):
        with c:
            while True:
                try:
                    d = c.recv(65536)
                except OSError:
                    return
                if not d:
                    return
                c.sendall(d)

    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def udp_echo_server(addr, port):
    s = socket.socket(family(addr), socket.SOCK_DGRAM)
    s.bind((addr, port))
    while True:
        d, a = s.recvfrom(65536)
        s.sendto(d, a)


def tcp_echo_client(addr, port, nbytes):
    data = os.urandom(nbytes)
    t0 = time.time()
    c = connect(addr, port, 20)
    sport = c.getsockname()[1]
    got = bytearray()

    def reader():
        while len(got) < nbytes:
            d = c.recv(65536)
            if not d:
                break
            got.extend(d)

    th = threading.Thread(target=reader)
    th.start()
    c.sendall(data)
    th.join(30)
    c.close()
    print(json.dumps({"sport": sport, "sent": nbytes, "received": len(got), "ok": bytes(got) == data,
                      "seconds": round(time.time() - t0, 3)}))


def udp_echo_client(addr, port, count, sport=0):
    s = socket.socket(family(addr), socket.SOCK_DGRAM)
    s.bind(("::" if ":" in addr else "0.0.0.0", sport))
    s.settimeout(0.5)
    sport = s.getsockname()[1]
    received = intact = 0
    for i in range(count):
        msg = os.urandom(16) + pattern(i, 200 + i % 1000)
        s.sendto(msg, (addr, port))
        try:
            d, _ = s.recvfrom(65536)
            received += 1
            intact += d == msg
        except socket.timeout:
            pass
    print(json.dumps({"sport": sport, "sent": count, "received": received, "intact": intact}))


def tcp_stream(addr, port, seconds, rate):
    c = connect(addr, port, 10)
    c.settimeout(None)
    sport = c.getsockname()[1]
    print(json.dumps({"event": "connected", "sport": sport}), flush=True)
    state = {"rx": 0, "ok": True, "last": time.time(), "max_stall": 0.0, "stall_at": None}
    done = threading.Event()

    def reader():
        while True:
            try:
                d = c.recv(65536)
            except OSError:
                break
            if not d:
                break
            now = time.time()
            gap = now - state["last"]
            if gap > state["max_stall"]:
                state["max_stall"] = gap
                state["stall_at"] = now
            state["last"] = now
            if d != pattern(state["rx"], len(d)):
                state["ok"] = False
            state["rx"] += len(d)
        done.set()

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    tx = 0
    chunk = 16384
    t0 = time.time()
    while time.time() - t0 < seconds:
        due = (time.time() - t0) * rate
        if tx < due:
            n = min(chunk, int(due - tx) + 1)
            c.sendall(pattern(tx, n))
            tx += n
        else:
            time.sleep(0.005)
    c.shutdown(socket.SHUT_WR)
    deadline = time.time() + 30
    while state["rx"] < tx and time.time() < deadline and not done.is_set():
        time.sleep(0.05)
    print(json.dumps({"event": "done", "sport": sport, "sent": tx, "received": state["rx"],
                      "ok": state["ok"] and state["rx"] == tx, "max_stall": round(state["max_stall"], 3),
                      "stall_end": state["stall_at"]}), flush=True)


def tcp_until_reset(addr, port, seconds):
    c = connect(addr, port, 10)
    c.settimeout(seconds)
    print(json.dumps({"event": "connected", "sport": c.getsockname()[1]}), flush=True)
    err = "no failure"
    t_end = time.time() + seconds
    while time.time() < t_end:
        try:
            c.sendall(b"x")
            if c.recv(1) != b"x":
                err = "closed"
                break
        except OSError as e:  # ConnectionResetError on an RST, socket.timeout when it hangs
            err = type(e).__name__
            break
        time.sleep(0.02)
    print(json.dumps({"event": "reset", "at": time.time(), "error": err}), flush=True)
    c.close()
    d = connect(addr, port, 10)
    d.settimeout(10)
    at = time.time()
    d.sendall(b"y")
    ok = d.recv(1) == b"y"
    print(json.dumps({"event": "reconnected", "sport": d.getsockname()[1], "at": at,
                      "echoed_at": time.time(), "ok": ok}), flush=True)
    # Keep it open a moment so the appliance that carries it can be asked.
    time.sleep(3)
    d.close()
    print(json.dumps({"event": "done"}), flush=True)


def tcp_streams(addr, port, count, seconds, rate):
    import selectors
    socks = [connect(addr, port, 10) for _ in range(count)]
    print(json.dumps({"event": "connected", "sports": [c.getsockname()[1] for c in socks]}), flush=True)
    sel = selectors.DefaultSelector()
    t0 = time.time()
    st = []
    for i, c in enumerate(socks):
        c.setblocking(False)
        sel.register(c, selectors.EVENT_READ, i)
        st.append({"tx": 0, "rx": 0, "ok": True, "last": t0, "max_stall": 0.0, "eof": False, "shut": False})
    while True:
        now = time.time()
        el = now - t0
        for c, s in zip(socks, st):
            if el < seconds:
                due = el * rate
                if s["tx"] < due:
                    try:
                        s["tx"] += c.send(pattern(s["tx"], min(16384, int(due - s["tx"]) + 1)))
                    except BlockingIOError:
                        pass
                    except OSError:
                        s["ok"] = False
            elif not s["shut"]:
                s["shut"] = True
                try:
                    c.shutdown(socket.SHUT_WR)
                except OSError:
                    s["ok"] = False
        for key, _ in sel.select(timeout=0.005):
            c, s = key.fileobj, st[key.data]
            try:
                d = c.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                d = b""
                s["ok"] = False
            now = time.time()
            if not d:
                s["eof"] = True
                sel.unregister(c)
                continue
            s["max_stall"] = max(s["max_stall"], now - s["last"])
            s["last"] = now
            if d != pattern(s["rx"], len(d)):
                s["ok"] = False
            s["rx"] += len(d)
        if el >= seconds and all(s["eof"] or s["rx"] >= s["tx"] for s in st):
            break
        if el > seconds + 60:
            break
    print(json.dumps({"event": "done", "streams": [
        {"sport": c.getsockname()[1] if c.fileno() >= 0 else 0, "sent": s["tx"], "received": s["rx"],
         "ok": s["ok"] and s["rx"] == s["tx"], "max_stall": round(s["max_stall"], 3)}
        for c, s in zip(socks, st)]}), flush=True)


TCP_STATES = ["?", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2", "TIME_WAIT",
              "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING"]


def tcp_info(c):
    """The kernel's struct tcp_info fields a hung or broken connection is judged by."""
    import struct
    try:
        b = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    except OSError:
        return None
    state, _ca, retransmits, _probes, backoff = struct.unpack_from("BBBBB", b, 0)
    rto_us, = struct.unpack_from("I", b, 8)
    unacked, = struct.unpack_from("I", b, 24)
    last_data_recv_ms, = struct.unpack_from("I", b, 52)
    total_retrans, = struct.unpack_from("I", b, 100) if len(b) >= 104 else (None,)
    return {"state": TCP_STATES[state] if state < len(TCP_STATES) else state, "retransmits": retransmits,
            "backoff": backoff, "rto_ms": rto_us // 1000, "unacked": unacked, "total_retrans": total_retrans,
            "last_data_recv_ms": last_data_recv_ms}


def reconnect_once(addr, port, attempts=1):
    """A new connection after a broken one: when it is up and when its first byte is echoed.
    attempts > 1: one that fails is tried again, up to that many times in all, as
    an application retries; `attempts` and the earlier tries' `errors` say so."""
    errors = []
    for n in range(1, attempts + 1):
        r = reconnect_try(addr, port)
        if "error" not in r or n == attempts:
            if attempts > 1:
                r.update(attempts=n, errors=errors)
            return r
        errors.append(r["error"])


def reconnect_try(addr, port):
    try:
        d = connect(addr, port, 10)
        at = time.time()
        d.settimeout(10)
        d.sendall(b"y")
        if d.recv(1) != b"y":
            return {"error": "no echo"}
        r = {"sport": d.getsockname()[1], "connected_at": at, "first_byte_at": time.time()}
        time.sleep(2)  # open a moment, so that the appliance carrying it can be asked
        d.close()
        return r
    except OSError as e:
        return {"error": type(e).__name__}


def tcp_watch(addr, port, seconds, rate, limit, reconnect=0):
    import errno
    import selectors
    c = connect(addr, port, 10)
    t0 = time.time()
    sport = c.getsockname()[1]
    print(json.dumps({"event": "connected", "sport": sport, "t": t0}), flush=True)
    c.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(c, selectors.EVENT_READ)
    tx = rx = 0
    intact, shut, eof = True, False, False
    last_rx, max_stall, error, error_at = t0, 0.0, None, None
    while not eof and error is None:
        now = time.time()
        if now - t0 > limit:
            break
        if now - t0 < seconds:
            due = (now - t0) * rate
            if tx < due:
                try:
                    tx += c.send(pattern(tx, min(16384, int(due - tx) + 1)))
                except BlockingIOError:
                    pass
                except OSError as e:
                    error, error_at = errno.errorcode.get(e.errno, str(e)), time.time()
                    break
        elif not shut:
            shut = True
            try:
                c.shutdown(socket.SHUT_WR)
            except OSError as e:
                error, error_at = errno.errorcode.get(e.errno, str(e)), time.time()
                break
        for _key, _ in sel.select(timeout=0.005):
            try:
                d = c.recv(65536)
            except BlockingIOError:
                continue
            except OSError as e:
                error, error_at = errno.errorcode.get(e.errno, str(e)), time.time()
                break
            now = time.time()
            if not d:
                eof = True
                break
            max_stall = max(max_stall, now - last_rx)
            last_rx = now
            if d != pattern(rx, len(d)):
                intact = False
            rx += len(d)
        if shut and rx >= tx:
            break
    print(json.dumps({"event": "done", "sport": sport, "sent": tx,
                      "received": rx, "complete": shut and rx == tx and error is None, "intact": intact,
                      "last_rx": last_rx, "max_stall": round(max(max_stall, time.time() - last_rx), 3),
                      "error": error, "error_at": error_at, "tcp_info": tcp_info(c), "end": time.time(),
                      "reconnect": reconnect_once(addr, port, reconnect) if reconnect and error else None}),
          flush=True)


def ping(addr, count):
    """ICMP echo with a raw socket (no ping binary needed)."""
    import struct
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.settimeout(0.5)
    ident = os.getpid() & 0xffff
    received = 0
    for seq in range(count):
        body = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + b"gwlb-e2e" * 4
        csum = 0
        for i in range(0, len(body), 2):
            csum += (body[i] << 8) + body[i + 1]
        csum = (csum >> 16) + (csum & 0xffff)
        csum = ~(csum + (csum >> 16)) & 0xffff
        body = body[:2] + struct.pack("!H", csum) + body[4:]
        s.sendto(body, (addr, 0))
        t_end = time.time() + 0.5
        while time.time() < t_end:
            try:
                d, a = s.recvfrom(2048)
            except socket.timeout:
                break
            ihl = (d[0] & 0x0f) * 4
            if a[0] == addr and d[ihl] == 0 and struct.unpack("!HH", d[ihl + 4:ihl + 8]) == (ident, seq):
                received += 1
                break
    print(json.dumps({"sent": count, "received": received}))


def inet_sum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return ~total & 0xffff


def fragments(src, dst, sport, dport, payload, order):
    """The raw IP fragments (headers included) of one UDP datagram, in the order
    asked for; at most 1,500 bytes each."""
    import ipaddress
    import struct
    v6 = ":" in dst
    s_b, d_b = ipaddress.ip_address(src).packed, ipaddress.ip_address(dst).packed
    ulen = 8 + len(payload)
    pseudo = s_b + d_b + (struct.pack("!IxxxB", ulen, 17) if v6 else struct.pack("!xBH", 17, ulen))
    csum = inet_sum(pseudo + struct.pack("!HHHH", sport, dport, ulen, 0) + payload) or 0xffff
    data = struct.pack("!HHHH", sport, dport, ulen, csum) + payload
    ident = int.from_bytes(os.urandom(4), "big")
    step = 1448 if v6 else 1480  # multiples of 8
    frags = []
    for off in range(0, len(data), step):
        piece, more = data[off:off + step], off + step < len(data)
        if v6:
            hdr = struct.pack("!IHBB", 6 << 28, 8 + len(piece), 44, 64) + s_b + d_b
            frags.append(hdr + struct.pack("!BBHI", 17, 0, off | more, ident) + piece)
        else:
            h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(piece), ident & 0xffff,
                            (off >> 3) | (0x2000 if more else 0), 64, 17, 0, s_b, d_b)
            frags.append(h[:10] + struct.pack("!H", inet_sum(h)) + h[12:] + piece)
    if order == "first-first":
        return frags[:1] + frags[:0:-1]
    if order == "last-first":
        return frags[::-1]
    raise ValueError(order)


def frag_client(addr, port, size, order, count):
    fam = family(addr)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind(("::" if fam == socket.AF_INET6 else "0.0.0.0", 0))
    s.settimeout(1.0)
    sport = s.getsockname()[1]
    if fam == socket.AF_INET:
        s.setsockopt(socket.IPPROTO_IP, 10, 0)  # IP_MTU_DISCOVER = IP_PMTUDISC_DONT: fragment
    else:
        s.setsockopt(socket.IPPROTO_IPV6, 23, 0)  # IPV6_MTU_DISCOVER = IPV6_PMTUDISC_DONT
    probe = socket.socket(fam, socket.SOCK_DGRAM)
    probe.connect((addr, port))
    src = probe.getsockname()[0]
    rawsock = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_RAW)  # header included
    received = intact = nfrag = 0
    for i in range(count):
        msg = os.urandom(16) + pattern(i, size - 16)
        if order == "kernel":
            s.sendto(msg, (addr, port))
        else:
            frags = fragments(src, addr, sport, port, msg, order)
            nfrag = len(frags)
            for f in frags:
                rawsock.sendto(f, (addr, 0))
        try:
            d, _ = s.recvfrom(65536)
            received += 1
            intact += d == msg
        except socket.timeout:
            pass
    print(json.dumps({"sport": sport, "src": src, "sent": count, "fragments": nfrag,
                      "received": received, "intact": intact}))


def wait_ready(proto, addr, port, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if proto == "tcp":
                socket.create_connection((addr, port), timeout=1).close()
                return 0
            s = socket.socket(family(addr), socket.SOCK_DGRAM)
            s.settimeout(0.2)
            s.sendto(b"ready?", (addr, port))
            if s.recvfrom(64)[0] == b"ready?":
                return 0
        except OSError:
            time.sleep(0.05)
    print(f"{proto} {addr}:{port}: no answer within {timeout} s")
    return 1


def main():
    a = sys.argv[1:]
    if not a:
        print(__doc__)
        sys.exit(2)
    cmd = a[0]
    if cmd == "tcp-echo-server":
        tcp_echo_server(a[1], int(a[2]))
    elif cmd == "udp-echo-server":
        udp_echo_server(a[1], int(a[2]))
    elif cmd == "tcp-echo-client":
        tcp_echo_client(a[1], int(a[2]), int(a[3]))
    elif cmd == "udp-echo-client":
        udp_echo_client(a[1], int(a[2]), int(a[3]), int(a[4]) if len(a) > 4 else 0)
    elif cmd == "tcp-stream":
        tcp_stream(a[1], int(a[2]), float(a[3]), float(a[4]) if len(a) > 4 else 2e6)
    elif cmd == "tcp-streams":
        tcp_streams(a[1], int(a[2]), int(a[3]), float(a[4]), float(a[5]))
    elif cmd == "tcp-watch":
        tcp_watch(a[1], int(a[2]), float(a[3]), float(a[4]), float(a[5]),
                  {"reconnect": 1, "reconnect-retry": 3}.get(a[6] if len(a) > 6 else "", 0))
    elif cmd == "tcp-until-reset":
        tcp_until_reset(a[1], int(a[2]), float(a[3]))
    elif cmd == "ping":
        ping(a[1], int(a[2]))
    elif cmd == "wait-ready":
        sys.exit(wait_ready(a[1], a[2], int(a[3]), float(a[4])))
    elif cmd == "frag-client":
        frag_client(a[1], int(a[2]), int(a[3]), a[4], int(a[5]))
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
