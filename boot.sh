#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# Regenerates the autotools files after a fresh clone: ./boot.sh && ./configure
set -e
autoreconf --install --force
