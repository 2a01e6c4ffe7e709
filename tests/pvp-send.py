#! /usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Sends COUNT Ethernet frames to DST-MAC out of interface IFACE, paced.

    pvp-send.py IFACE DST-MAC COUNT

Each frame is 64 bytes on the wire (60 here, without the FCS), with
IFACE's own MAC as its source, the local experimental EtherType 0x88b5 and
its sequence number in the payload.  Frames go in batches of 10, 5 ms
apart (2,000 a second): a kernel port of OVS's userspace datapath is
read by its main thread through an AF_PACKET socket that holds about 90
frames, 45 ms of this, which a loaded machine's scheduler mostly gives.
Exits 0 once all are sent."""

import socket
import struct
import sys
import time


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    iface, dst, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(f"/sys/class/net/{iface}/address") as f:
        src = bytes.fromhex(f.read().strip().replace(":", ""))
    dst = bytes.fromhex(dst.replace(":", ""))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    for i in range(count):
        payload = struct.pack("!I", i).ljust(46, b"\0")
        s.send(dst + src + struct.pack("!H", 0x88b5) + payload)
        if i % 10 == 9:
            time.sleep(0.005)
    s.close()


if __name__ == "__main__":
    main()
