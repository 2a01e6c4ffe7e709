#! /usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Bulk UDP across an OVN logical network, counted at both ends.

    ovn-udp.py recv PORT COUNT TIMEOUT   prints "received N datagrams B bytes"
                                         once COUNT arrived or after TIMEOUT s
                                         of silence (or in all)
    ovn-udp.py send ADDR PORT COUNT SIZE prints "sent N datagrams B bytes"

The sender sets SO_NO_CHECK: its datagrams carry no UDP checksum, so
none is left for a NIC to fill in.  The VIFs are veths, whose checksum
offload leaves it to whoever transmits the frame last; the userspace
datapath of OVS 3.1 (without userspace-tso) sends such frames on
unfinished, and the receiver would drop them.  No ethtool needed.
Each datagram carries its sequence number, so duplicates are not counted.
"""
import socket
import sys
import time

SO_NO_CHECK = 11
SO_RCVBUFFORCE = 33


def recv(port, count, timeout):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # SO_RCVBUFFORCE (root): beyond net.core.rmem_max (208 kB here, ~90
    # datagrams), so that a receiver the scheduler keeps off the CPU for
    # a while loses nothing.
    try:
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
    except PermissionError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    s.bind(("0.0.0.0", port))
    print("listening", flush=True)
    seen = set()
    nbytes = 0
    end = time.monotonic() + timeout
    s.settimeout(timeout)
    while len(seen) < count and time.monotonic() < end:
        try:
            data = s.recv(65536)
        except socket.timeout:
            break
        seq = int.from_bytes(data[:4], "big")
        if seq not in seen:
            seen.add(seq)
            nbytes += len(data)
    print("received %d datagrams %d bytes" % (len(seen), nbytes), flush=True)


def send(addr, port, count, size):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, SO_NO_CHECK, 1)
    nbytes = 0
    pad = bytes(size - 4)
    for seq in range(count):
        nbytes += s.sendto(seq.to_bytes(4, "big") + pad, (addr, port))
        # Paced, under 3k datagrams/s: the test is of forwarding, not of
        # socket buffers on a shared 2-core machine.
        if seq % 8 == 7:
            time.sleep(0.003)
    print("sent %d datagrams %d bytes" % (count, nbytes), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "recv":
        recv(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    else:
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
