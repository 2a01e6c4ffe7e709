#! /usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Talks to a test guest's QEMU: its QMP socket and the guest's command port.

    qemu-guest.py qmp SOCKET COMMAND [ARGUMENTS-JSON] [--timeout SECS]
        Runs one QMP command; prints its "return" value as JSON and exits 0,
        or prints the error's class and description on stderr and exits 1.

    qemu-guest.py qmp-wait SOCKET EVENT [--timeout SECS]
        Waits for QMP event EVENT (e.g. SHUTDOWN, MIGRATION); prints its
        "data" as JSON.  Exits 1 on timeout.

    qemu-guest.py ctl SOCKET COMMAND [--timeout SECS]
        Runs shell COMMAND in the guest, through the command server that
        the guest's /init (tests/qemu-guest-init.sh) runs on its second
        serial port, connected to chardev socket SOCKET.  Prints the
        command's output and exits with its status; 124 on timeout.

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


def qmp(path, command, args, deadline):
    s, lines = qmp_open(path, deadline)
    msg = {"execute": command, "id": "ovsvhost"}
    if args:
        msg["arguments"] = json.loads(args)
    s.sendall(json.dumps(msg).encode() + b"\n")
    while True:
        reply = json.loads(lines.next())
        if reply.get("id") != "ovsvhost":
            continue                            # An event.
        if "error" in reply:
            err = reply["error"]
            print("%s: %s" % (err.get("class"), err.get("desc")),
                  file=sys.stderr)
            return 1
        print(json.dumps(reply.get("return")))
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


def main(argv):
    timeout = 30.0
    if "--timeout" in argv:
        i = argv.index("--timeout")
        timeout = float(argv[i + 1])
        del argv[i:i + 2]
    deadline = time.monotonic() + timeout
    try:
        if len(argv) in (3, 4) and argv[0] == "qmp":
            return qmp(argv[1], argv[2], argv[3] if len(argv) == 4 else None,
                       deadline)
        if len(argv) == 3 and argv[0] == "qmp-wait":
            return qmp_wait(argv[1], argv[2], deadline)
        if len(argv) == 3 and argv[0] == "ctl":
            return ctl(argv[1], argv[2], deadline)
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
