#! /bin/sh
# Regenerates the autotools files after a fresh clone: ./boot.sh && ./configure
set -e
autoreconf --install --force
