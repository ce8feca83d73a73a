#!/usr/bin/python3
"""The soak's traffic (scripts/soak.sh), both ends, one thread each (selectors):

  soak_traffic.py serve ADDR [--tcp PORT,...] [--udp PORT]   echo servers (the server namespace)
  soak_traffic.py client SERVER --seconds T --out FILE [options]   (the client namespace)

The client runs, for T seconds:
  - long-lived TCP streams to port 7000 (--streams, --stream-rate bytes/s
    each): every echoed byte is compared with what was sent (a position-dependent
    pattern, so loss, reordering and corruption all show); a stream whose
    connection breaks (an RST: gwlbd's send_tcp_reset, or a timeout) is
    recorded and reconnects at once from a new source port, and the new
    connection is checked from its first byte (each of the --streams slots
    keeps its traffic class through its reconnects);
  - short TCP connections to port 7100 at --conn-rate a second: connect, 32
    bytes each way (checked), close; one that takes over 5 s fails;
  - UDP flows to port 5353 (--udp-flows sockets, fixed source ports, one
    datagram each --udp-interval s, checked): a datagram without its echo
    within 2 s is lost;
  - ICMP echo (--ping-rate a second).
With --tenant-b ADDR (the lab's two listeners), every third stream, half the
short connections and every odd UDP flow come from ADDR (tenant B), and with
--bypass-port P every third stream goes to port P (a bypassed class); those
streams bind their source port from --bound-ports LO..LO+999, a range the
caller reserves (ip_local_reserved_ports) so that no flow of another class
gets the same client port (the appliances' flows are keyed by it).
Then it ends every stream cleanly (write side shut, the rest of the echo read).
Output: JSON lines in FILE: `open` and `stream` (each stream's connection,
when it opens and when it ends: its slot, and whether an RST ended it),
`reset` (a connection ended by an RST, when the client saw it), `reconnect`
(the slot's next connection, when its first echoed byte was verified: how
long after the break), `tick` (each second: what was sent, answered and failed),
`fail` (each failed short connection, lost datagram or echo, with its time),
`udpflow` (each UDP flow at the end) and `done`. Times are Unix times.
"""
import argparse
import errno
import json
import os
import selectors
import socket
import struct
import sys
import time

STREAM_PORT, SHORT_PORT, UDP_PORT = 7000, 7100, 5353
SHORT_TIMEOUT_S = 5.0
UDP_LOST_S = 2.0
USER_TIMEOUT_MS = 20000  # a stream with unacknowledged data for 20 s errors out (ETIMEDOUT)
_BASE = bytes((i * 7 + 3) % 251 for i in range(251)) * 80  # the stream pattern (period 251)


def pattern(offset, n):
    """Bytes offset..offset+n of the stream pattern."""
    out = bytearray()
    while n > 0:
        start = offset % 251
        piece = _BASE[start:start + min(n, len(_BASE) - 251)]
        out += piece
        offset += len(piece)
        n -= len(piece)
    return bytes(out)


# ---------------------------------------------------------------- server

def serve(addr, tcp_ports, udp_port):
    sel = selectors.DefaultSelector()
    for p in tcp_ports:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, p))
        s.listen(1024)
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, ("listen", None))
    if udp_port:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind((addr, udp_port))
        u.setblocking(False)
        sel.register(u, selectors.EVENT_READ, ("udp", None))
    conns = {}  # conn -> {"out": bytes not yet echoed, "eof": the client shut its side, "ev": registered}

    def close(c):
        conns.pop(c, None)
        try:
            sel.unregister(c)
        except (KeyError, ValueError):
            pass
        c.close()

    while True:
        for key, ev in sel.select(1.0):
            kind, _ = key.data
            s = key.fileobj
            if kind == "listen":
                for _ in range(64):
                    try:
                        c, _ = s.accept()
                    except (BlockingIOError, OSError):
                        break
                    c.setblocking(False)
                    conns[c] = {"out": b"", "eof": False, "ev": selectors.EVENT_READ}
                    sel.register(c, selectors.EVENT_READ, ("conn", None))
                continue
            if kind == "udp":
                for _ in range(64):
                    try:
                        d, a = s.recvfrom(65536)
                    except (BlockingIOError, OSError):
                        break
                    try:
                        s.sendto(d, a)
                    except OSError:
                        pass
                continue
            st = conns.get(s)
            if st is None:
                continue
            if ev & selectors.EVENT_READ:
                try:
                    d = s.recv(65536)
                except BlockingIOError:
                    d = None
                except OSError:
                    close(s)
                    continue
                if d == b"":
                    st["eof"] = True
                elif d:
                    st["out"] += d
            if st["out"]:
                try:
                    n = s.send(st["out"])
                except BlockingIOError:
                    n = 0
                except OSError:
                    close(s)
                    continue
                st["out"] = st["out"][n:]
            if st["eof"] and not st["out"]:
                close(s)
                continue
            # Read while there is room (1 MiB unechoed at most), write while there is something.
            want = (selectors.EVENT_READ if not st["eof"] and len(st["out"]) < (1 << 20) else 0) | \
                   (selectors.EVENT_WRITE if st["out"] else 0)
            if want != st["ev"]:
                st["ev"] = want
                sel.modify(s, want, ("conn", None))


# ---------------------------------------------------------------- client

class Out:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def write(self, **rec):
        self.f.write(json.dumps(rec, separators=(",", ":")) + "\n")


def nb_connect(addr, port, user_timeout=False, src=None):
    """A non-blocking TCP connect, from src = (address, port) when given."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    if src:
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(src)
        except OSError:
            s.close()
            raise
    if user_timeout:
        s.setsockopt(socket.IPPROTO_TCP, 18, USER_TIMEOUT_MS)  # TCP_USER_TIMEOUT
    rc = s.connect_ex((addr, port))
    if rc not in (0, errno.EINPROGRESS):
        s.close()
        raise OSError(rc, os.strerror(rc))
    return s


class Stream:
    def __init__(self, sid, slot, sock, now, after=None):
        self.id, self.slot, self.sock, self.t_open = sid, slot, sock, now
        self.after = after     # (id, sport, time) of the slot's connection this one replaces, if any
        self.first_rx = None   # when its first echoed byte was verified
        self.bound = 0         # the reserved source port it binds (0: the kernel's choice)
        self.reset = False     # an RST ended it
        self.state = "connecting"
        self.sport = 0
        self.tx = self.rx = 0
        self.t0 = now          # when sending started (its rate counts from there)
        self.last_rx = now
        self.max_stall, self.stall_at = 0.0, None
        self.error = None
        self.shut = False


class Client:
    def __init__(self, a):
        self.a = a
        self.out = Out(a.out)
        self.sel = selectors.DefaultSelector()
        self.streams = {}
        self.next_sid = 0
        self.replace_at = []  # (time, slot, (id, sport, time) of the broken connection): reconnects due
        self.next_bound = 0   # the next bound source port to try (a reconnect never reuses a recent one)
        self.shorts = {}      # sock -> [t_start, state, got]
        self.short_started = 0
        self.tick = self._zero_tick()
        self.totals = {"stream_bytes_verified": 0, "streams_opened": 0, "streams_broken": 0,
                       "streams_reset": 0, "streams_reconnected": 0,
                       "short_ok": 0, "short_fail": 0, "udp_sent": 0, "udp_received": 0, "udp_lost": 0,
                       "ping_sent": 0, "ping_received": 0, "ping_lost": 0}
        self.fails_this_second = 0

    @staticmethod
    def _zero_tick():
        return {"stream_rx": 0, "short_started": 0, "short_ok": 0, "short_fail": 0, "udp_sent": 0,
                "udp_received": 0, "udp_lost": 0, "ping_sent": 0, "ping_received": 0, "ping_lost": 0}

    def fail(self, now, what, reason, sport=0):
        self.tick[f"{what}_fail" if what == "short" else f"{what}_lost"] += 1
        self.totals[f"{what}_fail" if what == "short" else f"{what}_lost"] += 1
        if self.fails_this_second < 200:  # at most 200 lines a second; the tick counts them all
            self.out.write(ev="fail", t=round(now, 3), what=what, reason=reason, sport=sport)
        self.fails_this_second += 1

    # -- streams
    def stream_class(self, slot):
        """(source address or None, binds a reserved port, server port) of stream slot `slot`."""
        kind = slot % 3 if self.a.tenant_b else 0
        if kind == 2 and not self.a.bypass_port:
            kind = 1
        if kind == 1:
            return self.a.tenant_b, True, STREAM_PORT
        if kind == 2:
            return self.a.tenant_a, True, self.a.bypass_port
        return None, False, STREAM_PORT

    def bound_port(self):
        """The next reserved source port no open stream holds: round the range,
        so a reconnect never takes a port a gateway or appliance still holds
        an entry for (the appliances' flows are keyed by the client port)."""
        busy = {st.sport for st in self.streams.values()} | {st.bound for st in self.streams.values()}
        for _ in range(1000):
            port = self.a.bound_ports + self.next_bound % 1000
            self.next_bound += 1
            if port not in busy:
                return port
        raise OSError(errno.EADDRINUSE, "no reserved port free")

    def open_stream(self, now, slot=None, after=None):
        sid = self.next_sid
        self.next_sid += 1
        slot = sid if slot is None else slot
        src, binds, dport = self.stream_class(slot)
        bound = 0
        try:
            bound = self.bound_port() if binds else 0
            s = nb_connect(self.a.server, dport, user_timeout=True, src=(src, bound) if src else None)
        except OSError as e:
            self.out.write(ev="stream", id=sid, slot=slot, sport=bound, t_open=round(now, 3), t_close=round(now, 3),
                           sent=0, received=0, ok=False, reset=False, error=f"connect: {e}", max_stall=0,
                           stall_at=None)
            self.replace_at.append((now + 1, slot, after))
            return
        st = Stream(sid, slot, s, now, after)
        st.bound = bound
        self.streams[s] = st
        self.sel.register(s, selectors.EVENT_WRITE, ("stream", st))

    def end_stream(self, st, now, error=None, reset=False):
        if error and st.error is None:
            st.error = error
            st.reset = reset
        try:
            self.sel.unregister(st.sock)
        except (KeyError, ValueError):
            pass
        st.sock.close()
        self.streams.pop(st.sock, None)
        ok = st.error is None and st.rx == st.tx and st.state != "connecting"
        reset = st.reset and not ok
        if not ok:
            self.totals["streams_broken"] += 1
        src, _, dport = self.stream_class(st.slot)
        if reset:
            self.totals["streams_reset"] += 1
            self.out.write(ev="reset", t=round(now, 3), id=st.id, slot=st.slot, sport=st.sport,
                           src=src or self.a.tenant_a, dport=dport, error=st.error)
        self.out.write(ev="stream", id=st.id, slot=st.slot, sport=st.sport, src=src or self.a.tenant_a, dport=dport,
                       t_open=round(st.t_open, 3), t_close=round(now, 3), first_rx=round(st.first_rx, 3)
                       if st.first_rx else None, after=st.after[0] if st.after else None,
                       sent=st.tx, received=st.rx, ok=ok, reset=reset, error=st.error,
                       max_stall=round(st.max_stall, 3), stall_at=round(st.stall_at, 3) if st.stall_at else None)
        # A broken connection's slot reconnects at once while the traffic
        # runs (an RST means "connect again": the new SYN goes to an appliance
        # in service); a connection that never opened retries after 1 s.
        # A failed reconnect keeps the break it replaces (the time to the
        # slot's first byte counts from there).
        if not ok and now < self.t_end:
            opened = st.state != "connecting"
            self.replace_at.append((now if opened else now + 1, st.slot,
                                    (st.id, st.sport, now) if opened or not st.after else st.after))

    def stream_event(self, st, ev, now):
        s = st.sock
        if st.state == "connecting":
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                return self.end_stream(st, now, f"connect: {os.strerror(err)}")
            st.state, st.sport, st.t0, st.last_rx = "open", s.getsockname()[1], now, now
            self.totals["streams_opened"] += 1
            src, _, dport = self.stream_class(st.slot)
            self.out.write(ev="open", id=st.id, slot=st.slot, sport=st.sport, t=round(now, 3),
                           src=src or self.a.tenant_a, dport=dport, after=st.after[0] if st.after else None)
            self.sel.modify(s, selectors.EVENT_READ, ("stream", st))
            return
        if ev & selectors.EVENT_READ:
            try:
                d = s.recv(65536)
            except BlockingIOError:
                return
            except OSError as e:
                return self.end_stream(st, now, f"recv: {e.strerror or e}", e.errno == errno.ECONNRESET)
            if not d:
                return self.end_stream(st, now, None if st.shut else "closed by the peer")
            gap = now - st.last_rx
            if gap > st.max_stall:
                st.max_stall, st.stall_at = gap, now
            st.last_rx = now
            if d != pattern(st.rx, len(d)):
                return self.end_stream(st, now, f"corrupt data at byte {st.rx}")
            st.rx += len(d)
            if st.first_rx is None:
                st.first_rx = now
                if st.after:  # the first verified byte of a reconnect: the slot works again
                    self.totals["streams_reconnected"] += 1
                    src, _, dport = self.stream_class(st.slot)
                    self.out.write(ev="reconnect", t=round(now, 3), slot=st.slot, id=st.id, sport=st.sport,
                                   src=src or self.a.tenant_a, dport=dport, after=st.after[0],
                                   after_sport=st.after[1], t_break=round(st.after[2], 3),
                                   first_byte_s=round(now - st.after[2], 3))
            self.tick["stream_rx"] += len(d)
            self.totals["stream_bytes_verified"] += len(d)

    def pump_streams(self, now, sending):
        for st in list(self.streams.values()):
            if st.state != "open":
                if now - st.t_open > 20:
                    self.end_stream(st, now, "connect timeout")
                continue
            if sending:
                due = (now - st.t0) * self.a.stream_rate
                if st.tx < due and st.tx - st.rx < (1 << 20):
                    try:
                        st.tx += st.sock.send(pattern(st.tx, min(65536, int(due - st.tx) + 1)))
                    except BlockingIOError:
                        pass
                    except OSError as e:
                        self.end_stream(st, now, f"send: {e.strerror or e}", e.errno == errno.ECONNRESET)
            elif not st.shut:
                st.shut = True
                try:
                    st.sock.shutdown(socket.SHUT_WR)
                except OSError as e:
                    self.end_stream(st, now, f"shutdown: {e.strerror or e}")

    # -- short connections
    def start_short(self, now):
        self.tick["short_started"] += 1
        self.short_started += 1
        try:
            src = (self.a.tenant_b, 0) if self.a.tenant_b and self.short_started % 2 else None
            s = nb_connect(self.a.server, SHORT_PORT, src=src)
        except OSError as e:
            return self.fail(now, "short", f"connect: {e.strerror or e}")
        self.shorts[s] = [now, "connecting", b"", os.urandom(32)]
        self.sel.register(s, selectors.EVENT_WRITE, ("short", None))

    def end_short(self, s, now, reason=None):
        t0, state, got, msg = self.shorts.pop(s)
        try:
            sport = s.getsockname()[1]
        except OSError:
            sport = 0
        try:
            self.sel.unregister(s)
        except (KeyError, ValueError):
            pass
        s.close()
        if reason:
            self.fail(now, "short", f"{reason} ({state})", sport)
        else:
            self.tick["short_ok"] += 1
            self.totals["short_ok"] += 1

    def short_event(self, s, now):
        t0, state, got, msg = self.shorts[s]
        if state == "connecting":
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                return self.end_short(s, now, os.strerror(err))
            try:
                s.send(msg)
            except OSError as e:
                return self.end_short(s, now, f"send: {e.strerror or e}")
            self.shorts[s][1] = "echo"
            self.sel.modify(s, selectors.EVENT_READ, ("short", None))
            return
        try:
            d = s.recv(4096)
        except BlockingIOError:
            return
        except OSError as e:
            return self.end_short(s, now, f"recv: {e.strerror or e}")
        if not d:
            return self.end_short(s, now, "closed early")
        got += d
        self.shorts[s][2] = got
        if len(got) >= 32:
            self.end_short(s, now, None if got == msg else "corrupt echo")

    def expire_shorts(self, now):
        for s, (t0, *_ ) in list(self.shorts.items()):
            if now - t0 > SHORT_TIMEOUT_S:
                self.end_short(s, now, "timeout")

    # -- UDP and ICMP
    def setup_udp(self):
        self.udp = []
        for i in range(self.a.udp_flows):
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            u.bind((self.a.tenant_b if self.a.tenant_b and i % 2 else "0.0.0.0", self.a.udp_base_port + i))
            u.setblocking(False)
            f = {"sock": u, "sport": self.a.udp_base_port + i, "seq": 0, "out": {}, "sent": 0, "received": 0,
                 "lost": 0, "bad": 0}
            self.udp.append(f)
            self.sel.register(u, selectors.EVENT_READ, ("udp", f))
        self.ping = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        self.ping.setblocking(False)
        self.ping_id, self.ping_seq, self.ping_out = os.getpid() & 0xFFFF, 0, {}
        self.sel.register(self.ping, selectors.EVENT_READ, ("ping", None))

    def udp_send(self, f, now):
        seq = f["seq"]
        f["seq"] += 1
        msg = struct.pack("!4sHI", b"soak", f["sport"], seq) + pattern(seq, 200 + seq % 800)
        try:
            f["sock"].sendto(msg, (self.a.server, UDP_PORT))
        except OSError:
            pass
        f["out"][seq] = now
        f["sent"] += 1
        self.tick["udp_sent"] += 1
        self.totals["udp_sent"] += 1

    def udp_event(self, f, now):
        for _ in range(64):
            try:
                d = f["sock"].recv(65536)
            except (BlockingIOError, OSError):
                return
            if len(d) < 10:
                continue
            _, sport, seq = struct.unpack("!4sHI", d[:10])
            if seq in f["out"] and d[10:] == pattern(seq, 200 + seq % 800):
                del f["out"][seq]
                f["received"] += 1
                self.tick["udp_received"] += 1
                self.totals["udp_received"] += 1
            else:
                f["bad"] += 1

    def ping_send(self, now):
        seq = self.ping_seq & 0xFFFF
        self.ping_seq += 1
        body = struct.pack("!BBHHH", 8, 0, 0, self.ping_id, seq) + b"gwlb-soak" * 4
        csum = sum((body[i] << 8) + body[i + 1] for i in range(0, len(body) - 1, 2))
        if len(body) % 2:
            csum += body[-1] << 8
        csum = (csum >> 16) + (csum & 0xFFFF)
        csum = ~(csum + (csum >> 16)) & 0xFFFF
        body = body[:2] + struct.pack("!H", csum) + body[4:]
        try:
            self.ping.sendto(body, (self.a.server, 0))
        except OSError:
            pass
        self.ping_out[seq] = now
        self.tick["ping_sent"] += 1
        self.totals["ping_sent"] += 1

    def ping_event(self, now):
        for _ in range(64):
            try:
                d, a = self.ping.recvfrom(2048)
            except (BlockingIOError, OSError):
                return
            ihl = (d[0] & 0x0F) * 4
            if a[0] != self.a.server or len(d) < ihl + 8 or d[ihl] != 0:
                continue
            ident, seq = struct.unpack("!HH", d[ihl + 4:ihl + 8])
            if ident == self.ping_id and seq in self.ping_out:
                del self.ping_out[seq]
                self.tick["ping_received"] += 1
                self.totals["ping_received"] += 1

    def expire_dgrams(self, now, final=False):
        for f in self.udp:
            for seq, t in list(f["out"].items()):
                if final or now - t > UDP_LOST_S:
                    del f["out"][seq]
                    f["lost"] += 1
                    self.fail(t, "udp", "no echo", f["sport"])
        for seq, t in list(self.ping_out.items()):
            if final or now - t > UDP_LOST_S:
                del self.ping_out[seq]
                self.fail(t, "ping", "no echo")

    # -- the loop
    def run(self):
        a = self.a
        t_start = time.time()
        self.t_end = t_start + a.seconds
        self.out.write(ev="start", t=round(t_start, 3), streams=a.streams, stream_rate=a.stream_rate,
                       conn_rate=a.conn_rate, udp_flows=a.udp_flows, udp_interval=a.udp_interval,
                       ping_rate=a.ping_rate, seconds=a.seconds)
        self.setup_udp()
        for _ in range(a.streams):
            self.open_stream(time.time())
        next_tick = t_start + 1
        next_udp = next_ping = t_start
        last_stream_check = 0
        while True:
            now = time.time()
            sending = now < self.t_end
            if sending:
                due = int((now - t_start) * a.conn_rate)
                n = 0
                while self.short_started < due and n < 50 and len(self.shorts) < 4000:
                    self.start_short(now)
                    n += 1
                if now >= next_udp:
                    for f in self.udp:
                        self.udp_send(f, now)
                    next_udp += a.udp_interval
                if a.ping_rate and now >= next_ping:
                    self.ping_send(now)
                    next_ping += 1.0 / a.ping_rate
                self.replace_at.sort(key=lambda x: x[0])
                while self.replace_at and self.replace_at[0][0] <= now:
                    _, slot, after = self.replace_at.pop(0)
                    self.open_stream(now, slot, after)
            if now - last_stream_check > 0.01:
                self.pump_streams(now, sending)
                last_stream_check = now
            for key, ev in self.sel.select(0.005):
                kind, obj = key.data
                if kind == "stream":
                    self.stream_event(obj, ev, now)
                elif kind == "short":
                    if key.fileobj in self.shorts:
                        self.short_event(key.fileobj, now)
                elif kind == "udp":
                    self.udp_event(obj, now)
                else:
                    self.ping_event(now)
            if now >= next_tick:
                self.expire_shorts(now)
                self.expire_dgrams(now)
                self.out.write(ev="tick", t=round(next_tick, 3), streams_open=len(self.streams),
                               shorts_open=len(self.shorts), **self.tick)
                self.tick = self._zero_tick()
                self.fails_this_second = 0
                next_tick += 1
            if not sending:
                # streams: the rest of the echo, 30 s at most; shorts: their timeouts
                done = not self.streams and not self.shorts
                if done or now > self.t_end + 30:
                    break
        now = time.time()
        for st in list(self.streams.values()):
            self.end_stream(st, now, "echo not complete 30 s after the end")
        for s in list(self.shorts):
            self.end_short(s, now, "timeout")
        self.expire_dgrams(now + 2 * UDP_LOST_S)  # anything sent in the last 2 s had its time
        for f in self.udp:
            self.out.write(ev="udpflow", sport=f["sport"], sent=f["sent"], received=f["received"],
                           lost=f["lost"], bad=f["bad"])
        self.out.write(ev="done", t=round(now, 3), **self.totals)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("addr")
    s.add_argument("--tcp", default=f"{STREAM_PORT},{SHORT_PORT}")
    s.add_argument("--udp", type=int, default=UDP_PORT)
    c = sub.add_parser("client")
    c.add_argument("server")
    c.add_argument("--seconds", type=float, required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--streams", type=int, default=24)
    c.add_argument("--stream-rate", type=float, default=16000)
    c.add_argument("--conn-rate", type=float, default=200)
    c.add_argument("--udp-flows", type=int, default=8)
    c.add_argument("--udp-base-port", type=int, default=41000)
    c.add_argument("--udp-interval", type=float, default=0.1)
    c.add_argument("--ping-rate", type=float, default=5)
    c.add_argument("--tenant-a", default="10.77.1.2", help="the client's (tenant A's) address")
    c.add_argument("--tenant-b", default=None, help="tenant B's address (a second listener's class)")
    c.add_argument("--bypass-port", type=int, default=0, help="every third stream to this port (bypassed)")
    c.add_argument("--bound-ports", type=int, default=45000,
                   help="first of 1000 reserved source ports for tenant B's and bypassed streams")
    a = ap.parse_args()
    if a.cmd == "serve":
        serve(a.addr, [int(p) for p in a.tcp.split(",") if p], a.udp)
    else:
        Client(a).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
