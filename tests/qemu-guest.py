#! /usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Talks to a test guest's QEMU: its QMP socket and the guest's command port.

    qemu-guest.py qmp SOCKET COMMAND [ARGUMENTS-JSON] [--timeout SECS]
        Runs one QMP command; prints its "return" value as JSON and exits 0,
        or prints the error's class and description on stderr and exits 1.

    qemu-guest.py qmp SOCKET COMMAND ARGUMENTS-JSON --event EVENT
                                                    [--timeout SECS]
        As above, then waits, on the same connection, for QMP event EVENT
        (e.g. DEVICE_DELETED after device_del) and prints its "data" as
        JSON too: no event can come before the waiter listens.  Exits 1 on
        timeout.

    qemu-guest.py qmp-wait SOCKET EVENT [--timeout SECS]
        Waits for QMP event EVENT (e.g. SHUTDOWN, MIGRATION); prints its
        "data" as JSON.  Exits 1 on timeout.

    qemu-guest.py ctl SOCKET COMMAND [--timeout SECS]
        Runs shell COMMAND in the guest, through the command server that
        the guest's /init (tests/qemu-guest-init.sh) runs on its second
        serial port, connected to chardev socket SOCKET.  Prints the
        command's output and exits with its status; 124 on timeout.

    qemu-guest.py udp-send DST PORT FLOWS COUNT SIZE [PPS] [--no-check]
    qemu-guest.py udp-recv PORT COUNT SECS
        The host's end of the guest tool's commands of the same names
        (tests/qemu-guest-tool.c): COUNT datagrams of SIZE bytes from FLOWS
        source ports, at most PPS a second; or counts what arrives on PORT
        and how much of it is not the pattern the sender wrote ("received
        N bad B").  Run them in the OVS namespace (ip netns exec).
        --no-check sends without UDP checksums (SO_NO_CHECK), from a veth
        (an OVN VIF): a veth leaves the checksum to whoever transmits the
        frame last, and OVS 3.1's userspace datapath, without
        userspace-tso, sends it on unfinished (tests/ovn-udp.py).

The timeout defaults to 30 s.  Only the python3 standard library is used.
"""

import json
import os
import re
import socket
import sys
import time


def connect(path, deadline):
    """Connects to unix socket 'path', retrying until 'deadline' while the
    socket is absent or refuses (QEMU not listening yet)."""
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except (FileNotFoundError, ConnectionRefusedError):
            s.close()
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


class Lines:
    """Reads newline-terminated lines from socket 's' until 'deadline'."""

    def __init__(self, s, deadline):
        self.s, self.deadline, self.buf = s, deadline, b""

    def next(self):
        while b"\n" not in self.buf:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self.s.settimeout(left)
            try:
                data = self.s.recv(65536)
            except socket.timeout:
                raise TimeoutError
            if not data:
                raise EOFError
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode("utf-8", "replace").rstrip("\r")


def qmp_open(path, deadline):
    s = connect(path, deadline)
    lines = Lines(s, deadline)
    json.loads(lines.next())                    # The greeting.
    s.sendall(b'{"execute": "qmp_capabilities"}\n')
    while "return" not in json.loads(lines.next()):
        pass
    return s, lines


def qmp(path, command, args, deadline, event=None):
    s, lines = qmp_open(path, deadline)
    msg = {"execute": command, "id": "ovsvhost"}
    if args:
        msg["arguments"] = json.loads(args)
    s.sendall(json.dumps(msg).encode() + b"\n")
    seen = None
    while True:
        reply = json.loads(lines.next())
        if reply.get("id") != "ovsvhost":
            # An event: the one awaited may come before the reply.
            if event and seen is None and reply.get("event") == event:
                seen = reply.get("data", {})
            continue
        if "error" in reply:
            err = reply["error"]
            print("%s: %s" % (err.get("class"), err.get("desc")),
                  file=sys.stderr)
            return 1
        print(json.dumps(reply.get("return")))
        break
    if event:
        while seen is None:
            msg = json.loads(lines.next())
            if msg.get("event") == event:
                seen = msg.get("data", {})
        print(json.dumps(seen))
    return 0


def qmp_wait(path, event, deadline):
    s, lines = qmp_open(path, deadline)
    while True:
        msg = json.loads(lines.next())
        if msg.get("event") == event:
            print(json.dumps(msg.get("data", {})))
            return 0


def ctl(path, command, deadline):
    s = connect(path, deadline)
    lines = Lines(s, deadline)
    cid = "%d.%d" % (os.getpid(), int(time.time() * 1000) % 1000000)
    # Empty lines until the server answers one: a line sent before the
    # guest's /init opens the port is lost.
    hello = Lines(s, 0)
    while True:
        s.sendall(b"\n")
        hello.deadline = min(deadline, time.monotonic() + 0.5)
        try:
            while hello.next() != "ovsvhost-ctl-ready":
                pass
            break
        except TimeoutError:
            if time.monotonic() >= deadline:
                raise
    lines.buf = hello.buf
    s.sendall(("%s %s\n" % (cid, command)).encode())
    # Anything before our "begin" is left over from an earlier client.
    while lines.next() != "ovsvhost-begin " + cid:
        pass
    done = re.compile(r"^ovsvhost-done %s rc=(\d+)$" % re.escape(cid))
    while True:
        line = lines.next()
        m = done.match(line)
        if m:
            return int(m.group(1))
        print(line, flush=True)


_udp_bodies = {}


def udp_pattern(seq, size):
    """Datagram 'seq' of 'size' bytes, as qemu-guest-tool.c writes it: the
    number, big endian, then bytes (seq + i) & 0xff (256 bodies, cached)."""
    key = (seq & 0xff, size)
    body = _udp_bodies.get(key)
    if body is None:
        body = bytes((seq + i) & 0xff for i in range(4, size))
        _udp_bodies[key] = body
    return seq.to_bytes(4, "big") + body


def udp_send(dst, port, flows, count, size, pps, nocheck=False):
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
             for _ in range(flows)]
    for s in socks:
        # A datagram the qdisc drops is then ENOBUFS, not a silent loss.
        s.setsockopt(socket.IPPROTO_IP, 11, 1)      # IP_RECVERR
        if nocheck:
            s.setsockopt(socket.SOL_SOCKET, 11, 1)  # SO_NO_CHECK
    t0 = time.monotonic()
    for i in range(count):
        if pps and i and i % 16 == 0:
            delay = t0 + i / pps - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        data = udp_pattern(i & 0xffffffff, size)
        while True:
            try:
                socks[i % flows].sendto(data, (dst, port))
                break
            except (BlockingIOError, InterruptedError):
                time.sleep(0.001)
            except OSError as e:
                if e.errno != 105:      # ENOBUFS: a full qdisc, try again
                    raise
                time.sleep(0.001)
    print("sent %d" % count, flush=True)
    return 0


def udp_recv(port, count, secs):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)   # SO_RCVBUFFORCE
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("0.0.0.0", port))
    print("listening", flush=True)
    end = time.monotonic() + secs
    got = bad = 0
    while got < count:
        left = end - time.monotonic()
        if left <= 0:
            break
        s.settimeout(min(left, 3.0) if got else left)
        try:
            data = s.recv(65536)
        except socket.timeout:
            if got:
                break
            continue
        got += 1
        if len(data) < 4 or data != udp_pattern(
                int.from_bytes(data[:4], "big"), len(data)):
            bad += 1
    print("received %d bad %d" % (got, bad), flush=True)
    return 0


def main(argv):
    timeout = 30.0
    if "--timeout" in argv:
        i = argv.index("--timeout")
        timeout = float(argv[i + 1])
        del argv[i:i + 2]
    event = None
    if "--event" in argv:
        i = argv.index("--event")
        event = argv[i + 1]
        del argv[i:i + 2]
    nocheck = "--no-check" in argv
    if nocheck:
        argv.remove("--no-check")
    deadline = time.monotonic() + timeout
    try:
        if len(argv) in (3, 4) and argv[0] == "qmp":
            return qmp(argv[1], argv[2], argv[3] if len(argv) == 4 else None,
                       deadline, event)
        if len(argv) == 3 and argv[0] == "qmp-wait":
            return qmp_wait(argv[1], argv[2], deadline)
        if len(argv) == 3 and argv[0] == "ctl":
            return ctl(argv[1], argv[2], deadline)
        if len(argv) in (6, 7) and argv[0] == "udp-send":
            return udp_send(argv[1], *[int(a) for a in argv[2:6]],
                            int(argv[6]) if len(argv) == 7 else 0, nocheck)
        if len(argv) == 4 and argv[0] == "udp-recv":
            return udp_recv(*[int(a) for a in argv[1:4]])
    except TimeoutError:
        print("qemu-guest.py: %s: timed out after %g s" % (argv[0], timeout),
              file=sys.stderr)
        return 124
    except (EOFError, OSError) as e:
        print("qemu-guest.py: %s: %s" % (argv[0], e or "connection closed"),
              file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
