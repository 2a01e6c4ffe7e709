#! /usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Asks a vhost-user backend what it offers, as a frontend's first words.

    vhost-user-probe.py SOCKET [--listen] [--timeout SECS]
        Connects to the backend listening at SOCKET (a dpdkvhostuser
        port), or with --listen listens there and takes the backend's
        connection (a dpdkvhostuserclient port whose vhost-server-path is
        SOCKET), sends GET_FEATURES and GET_PROTOCOL_FEATURES, prints
        "features 0x... protocol_features 0x..." and closes.  Exits 1 on
        timeout (default 30 s) or a malformed reply.

For tests of what a port offers (tests/ovs.at); only the python3 standard
library is used.
"""

import os
import socket
import struct
import sys
import time

GET_FEATURES = 1
GET_PROTOCOL_FEATURES = 15
VERSION = 0x1
REPLY = 0x4
HDR = struct.Struct("<III")     # request, flags, size


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError("backend closed the connection")
        buf += chunk
    return buf


def ask_u64(s, request):
    s.sendall(HDR.pack(request, VERSION, 0))
    req, flags, size = HDR.unpack(recv_exact(s, HDR.size))
    if req != request or not flags & REPLY or size != 8:
        raise ValueError("bad reply to %d: request %d flags %#x size %d"
                         % (request, req, flags, size))
    return struct.unpack("<Q", recv_exact(s, 8))[0]


def main(argv):
    timeout = 30.0
    listen = False
    args = []
    i = 1
    while i < len(argv):
        if argv[i] == "--listen":
            listen = True
        elif argv[i] == "--timeout":
            i += 1
            timeout = float(argv[i])
        else:
            args.append(argv[i])
        i += 1
    if len(args) != 1:
        sys.stderr.write(__doc__)
        return 2
    path = args[0]
    deadline = time.monotonic() + timeout

    if listen:
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        ls.bind(path)
        ls.listen(1)
        ls.settimeout(timeout)
        s, _ = ls.accept()
        ls.close()
        os.unlink(path)
    else:
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                s.close()
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.1)
    s.settimeout(max(deadline - time.monotonic(), 0.1))
    features = ask_u64(s, GET_FEATURES)
    protocol_features = ask_u64(s, GET_PROTOCOL_FEATURES)
    s.close()
    print("features %#x protocol_features %#x" % (features, protocol_features))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (OSError, EOFError, ValueError) as e:
        sys.stderr.write("vhost-user-probe: %s\n" % e)
        sys.exit(1)
