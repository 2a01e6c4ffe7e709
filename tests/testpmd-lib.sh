# SPDX-License-Identifier: Apache-2.0
# testpmd-lib.sh -- run dpdk-testpmd as a vhost-user peer from shell tests.
#
# Source this file (". tests/testpmd-lib.sh") from autotest tests or demo
# scripts.  Works with dash and bash (uses `local`, otherwise POSIX sh).
# Linux only (/proc, mkfifo).  Verified with DPDK 22.11 (Debian dpdk).
#
# Each instance is identified by NAME and a working DIR; files it owns:
#   DIR/NAME.log         stdout+stderr of testpmd (unbuffered)
#   DIR/NAME.pid         pid of dpdk-testpmd
#   DIR/NAME.keeper.pid  pid of the `sleep` that keeps the command fifo open
#   DIR/NAME.in          fifo connected to testpmd's stdin (interactive -i)
#   DIR/NAME.prefix      EAL --file-prefix used (NAME, $$ and a hash of DIR)
#   DIR/NAME.cmdline     the full command line, for the record
#   DIR/NAME.fwd         CPU slot (0|1) of its forwarding lcore
# testpmd always runs interactively (-i) reading commands from DIR/NAME.in;
# a keeper process holds the fifo's write side open so testpmd never sees
# EOF.  Only pids recorded in those files are ever signalled, and only after
# checking /proc/PID/cmdline still names the instance.
#
# Typical use:
#   . tests/testpmd-lib.sh
#   trap 'tpmd_stop_all "$D"' EXIT; trap 'exit 1' INT TERM HUP PIPE
#   tpmd_start be "$D" "net_vhost0,iface=$D/sock,queues=2" --rxq=2 --txq=2 \
#       --forward-mode=rxonly && tpmd_wait_ready be "$D"
#   tpmd_start fe "$D" "net_virtio_user0,path=$D/sock,queues=2" --rxq=2 \
#       --txq=2 --forward-mode=txonly && tpmd_wait_ready fe "$D"
#   tpmd_cmd be "$D" start; tpmd_cmd fe "$D" start; sleep 2
#   tpmd_cmd fe "$D" stop; tpmd_port_counts be "$D" 0    # -> "RX TX"
#   tpmd_stop fe "$D"; tpmd_stop be "$D"
# (dash runs no EXIT trap when killed by a signal, hence the second trap.)
#
# Also here: tpmd_cpu and tpmd_sum, and vfwd_* helpers that run
# ovs-vhost-fwd beside testpmd the same way (see the end of this file).
#
# Tunables (environment):
#   TPMD_BIN        testpmd binary             (default: dpdk-testpmd)
#   TPMD_MEM        EAL -m, MB                 (default: 1024)
#   TPMD_MBUFS      --total-num-mbufs          (default: 16384)
#   TPMD_FWD_CPU    0|1: which of the first two allowed CPUs runs the
#                   forwarding lcore (the other runs the main lcore, which
#                   mostly sleeps).  Default: whichever slot fewer running
#                   instances in the same DIR use, so a second instance
#                   gets the other CPU.  Two busy-polling forwarding lcores
#                   on one CPU still work but collapse to ~30 kpps (vs
#                   ~15 Mpps on separate CPUs) on this 2-core machine.
#   TPMD_LCORES     full EAL core args, overrides the above
#                   (e.g. "-l 0,1 --main-lcore 1")
#   TPMD_EAL_ARGS   extra EAL args, e.g. "--log-level=lib.vhost.config:debug"
#   TPMD_STOP_TIMEOUT  seconds to wait for "quit" before SIGTERM (default 10)
#
# Return codes: 0 ok, 1 timeout/not found, 2 instance not running (or bad
# usage), 3 (tpmd_wait_ready) a --vdev failed to probe.

# shellcheck disable=SC3043  # `local` (dash, bash, busybox ash all have it)
TPMD_BIN=${TPMD_BIN:-dpdk-testpmd}

# --- internals ------------------------------------------------------------

_tpmd_nap () { sleep 0.1 2>/dev/null || sleep 1; }

_tpmd_now () { date +%s; }

# Print the first two CPUs this process may run on (one line, space sep.).
_tpmd_cpus () {
    local list
    list=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status 2>/dev/null)
    [ -n "$list" ] || list=0
    echo "$list" | tr ',' '\n' | awk -F- '
        { lo = $1; hi = (NF > 1) ? $2 : $1
          for (c = lo; c <= hi && n < 2; c++) { printf "%s%d", (n ? " " : ""), c; n++ } }
        END { print "" }'
}

# _tpmd_pick_fwd DIR: forwarding CPU slot (0|1) used by fewer running
# instances recorded in DIR (ties -> 0).
_tpmd_pick_fwd () {
    local f n n0=0 n1=0
    for f in "$1"/*.fwd; do
        [ -e "$f" ] || continue
        n=${f##*/}; n=${n%.fwd}
        tpmd_running "$n" "$1" || continue
        if [ "$(cat "$f")" = 1 ]; then n1=$((n1 + 1)); else n0=$((n0 + 1)); fi
    done
    if [ $n1 -lt $n0 ]; then echo 1; else echo 0; fi
}

# _tpmd_lcore_args FWD_SLOT: EAL core arguments, one forwarding lcore on
# allowed CPU number FWD_SLOT (0|1) and the main lcore on the other.
_tpmd_lcore_args () {
    local cpus c0 c1
    if [ -n "${TPMD_LCORES:-}" ]; then echo "$TPMD_LCORES"; return; fi
    cpus=$(_tpmd_cpus)
    c0=${cpus%% *}
    c1=${cpus#* }
    if [ "$c0" = "$c1" ] || [ -z "$c1" ]; then
        # Single CPU: map both lcores onto it (slow but works).
        echo "--lcores 0@$c0,1@$c0 --main-lcore 1"
    elif [ "${1:-0}" = 1 ]; then
        echo "-l $c0,$c1 --main-lcore $c0"
    else
        echo "-l $c0,$c1 --main-lcore $c1"
    fi
}

# DPDK runtime directory root (see eal_get_runtime_dir()).
_tpmd_rundir_root () {
    if [ "$(id -u)" = 0 ]; then
        echo /var/run/dpdk
    else
        echo "${XDG_RUNTIME_DIR:-/tmp}/dpdk"
    fi
}

# _tpmd_alive PID PATTERN: PID is running (not a zombie) and its cmdline
# contains PATTERN.
_tpmd_alive () {
    local pid="$1" pat="$2" state
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
    state=$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$pid/status" 2>/dev/null)
    [ "$state" = Z ] && { wait "$pid" 2>/dev/null; return 1; }
    [ -n "$state" ] || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$pat"
}

_tpmd_read () { [ -r "$1" ] && cat "$1" 2>/dev/null; }

# _tpmd_wait_gone PID PATTERN TIMEOUT_S
_tpmd_wait_gone () {
    local end
    end=$(( $(_tpmd_now) + $3 ))
    while _tpmd_alive "$1" "$2"; do
        [ "$(_tpmd_now)" -lt "$end" ] || return 1
        _tpmd_nap
    done
    wait "$1" 2>/dev/null
    return 0
}

# _tpmd_log_size NAME DIR: current size of the log, in bytes.
_tpmd_log_size () {
    if [ -f "$2/$1.log" ]; then wc -c < "$2/$1.log" | tr -d ' '; else echo 0; fi
}

# --- public API -----------------------------------------------------------

# tpmd_start NAME DIR VDEVS [testpmd app args...]
#   Start one testpmd in the background.  VDEVS is a space-separated list of
#   --vdev specs (e.g. "net_vhost0,iface=$DIR/sock,queues=2").  App args
#   follow "-i --total-num-mbufs=N".  Returns once the process is spawned;
#   use tpmd_wait_ready to wait for the first prompt.  (virtio-user with
#   server=1 blocks in probe until the backend connects.)
tpmd_start () {
    local name vdevs dir prefix fifo log v vargs fwd
    if [ $# -lt 3 ]; then
        echo "usage: tpmd_start NAME DIR VDEVS [testpmd args...]" >&2; return 2
    fi
    name=$1 dir=$2 vdevs=$3
    shift 3
    tpmd_available || { echo "tpmd_start: $TPMD_BIN not found" >&2; return 2; }
    mkdir -p "$dir" || return 2
    if tpmd_running "$name" "$dir"; then
        echo "tpmd_start: $name already running in $dir" >&2; return 2
    fi
    # Unique per NAME and DIR: autotest -j runs test groups in subshells
    # that share $$, and testpmds with one --file-prefix collide.
    prefix=$name$$-$(printf '%s' "$dir" | cksum | cut -d' ' -f1)
    fifo=$dir/$name.in
    log=$dir/$name.log
    rm -f "$fifo" "$dir/$name.pid" "$dir/$name.keeper.pid" "$dir/$name.fwd"
    rm -rf "$(_tpmd_rundir_root)/${prefix:?}"
    mkfifo "$fifo" || return 2
    echo "$prefix" > "$dir/$name.prefix"
    vargs=
    for v in $vdevs; do vargs="$vargs --vdev $v"; done
    fwd=${TPMD_FWD_CPU:-$(_tpmd_pick_fwd "$dir")}
    # Keeper: holds the fifo open for writing so testpmd never reads EOF.
    # Both background processes get only the fds they need (an inherited
    # pipe would make e.g. x=$(tpmd_start ...) or "| tee" hang).
    # shellcheck disable=SC2217
    sleep 2147483647 > "$fifo" < /dev/null 2>/dev/null \
        3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
    echo $! > "$dir/$name.keeper.pid"
    # shellcheck disable=SC2086
    # shellcheck disable=SC2046
    set -- $(_tpmd_lcore_args "$fwd") --no-pci --no-huge -m "${TPMD_MEM:-1024}" \
        --single-file-segments --file-prefix "$prefix" ${TPMD_EAL_ARGS:-} \
        $vargs -- -i --total-num-mbufs="${TPMD_MBUFS:-16384}" "$@"
    echo "$TPMD_BIN $*" > "$dir/$name.cmdline"
    if command -v stdbuf >/dev/null 2>&1; then
        stdbuf -o0 -e0 "$TPMD_BIN" "$@" < "$fifo" > "$log" 2>&1 \
            3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
    else
        "$TPMD_BIN" "$@" < "$fifo" > "$log" 2>&1 \
            3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
    fi
    echo $! > "$dir/$name.pid"
    echo "$fwd" > "$dir/$name.fwd"
    return 0
}

# tpmd_available: true if $TPMD_BIN can be run (use for AT_SKIP_IF).
tpmd_available () {
    command -v "$TPMD_BIN" >/dev/null 2>&1 && command -v mkfifo >/dev/null 2>&1 &&
        [ -r /proc/self/status ]
}

# tpmd_pid NAME DIR: print the testpmd pid.
tpmd_pid () { _tpmd_read "$2/$1.pid"; }

# tpmd_running NAME DIR: true if that instance is alive.
tpmd_running () {
    _tpmd_alive "$(_tpmd_read "$2/$1.pid")" "--file-prefix $(_tpmd_read "$2/$1.prefix") "
}

# tpmd_wait_log NAME DIR REGEX TIMEOUT_S [FROM_BYTE]
#   Wait until the log (from byte offset FROM_BYTE, default 0) matches the
#   extended REGEX.  Returns 1 on timeout, 2 if testpmd exited first.
#   Note: async lines may follow a "testpmd> " prompt on the same line, so
#   do not anchor patterns with ^.
tpmd_wait_log () {
    local name="$1" dir="$2" re="$3" to="$4" from="${5:-0}" end
    end=$(( $(_tpmd_now) + to ))
    while :; do
        tail -c +$((from + 1)) "$dir/$name.log" 2>/dev/null | grep -Eq -- "$re" && return 0
        if ! tpmd_running "$name" "$dir"; then
            # last look: output may have landed just before exit
            tail -c +$((from + 1)) "$dir/$name.log" 2>/dev/null | grep -Eq -- "$re" && return 0
            return 2
        fi
        [ "$(_tpmd_now)" -lt "$end" ] || return 1
        _tpmd_nap
    done
}

# tpmd_wait_ready NAME DIR [TIMEOUT_S=60]: wait for the first "testpmd> "
#   prompt (EAL init and port setup done; ~3-5 s with -m 1024).  Returns 3
#   if testpmd came up but a --vdev failed to probe (testpmd keeps running
#   with fewer ports, e.g. virtio-user client with no socket to connect to).
tpmd_wait_ready () {
    local rc
    tpmd_wait_log "$1" "$2" 'testpmd> ' "${3:-60}"
    rc=$?
    [ $rc = 0 ] || return $rc
    if grep -Eq 'failed to initialize|probe failed|No probed ethernet devices' "$2/$1.log"; then
        echo "tpmd_wait_ready: $1: device probe failed (see $2/$1.log)" >&2
        return 3
    fi
    return 0
}

# tpmd_pps NAME DIR [PORT=0] [SECONDS=2]: print "RX_PPS TX_PPS" measured by
#   testpmd over SECONDS (two "show port stats", Throughput since last show).
tpmd_pps () {
    tpmd_cmd "$1" "$2" "show port stats ${3:-0}" >/dev/null || return $?
    sleep "${4:-2}"
    tpmd_cmd "$1" "$2" "show port stats ${3:-0}" | awk '
        $1 == "Rx-pps:" { rx = $2 } $1 == "Tx-pps:" { tx = $2 }
        END { print (rx == "" ? "?" : rx), (tx == "" ? "?" : tx) }'
}

# tpmd_cmd NAME DIR "COMMAND" [TIMEOUT_S=30]
#   Send one interactive command and print its output (up to the next
#   prompt, CRs stripped) on stdout.  "quit" waits for the process to exit.
#   Not safe to call concurrently for the same instance.
tpmd_cmd () {
    local name="$1" dir="$2" cmd="$3" to="${4:-30}" off rc
    tpmd_running "$name" "$dir" || { echo "tpmd_cmd: $name not running" >&2; return 2; }
    # Not up yet?  Wait for the first prompt, or we would mistake it for
    # the end of this command's output.
    grep -q 'testpmd> ' "$dir/$name.log" 2>/dev/null ||
        tpmd_wait_log "$name" "$dir" 'testpmd> ' "$to" || return $?
    off=$(_tpmd_log_size "$name" "$dir")
    # 1<> opens the fifo read-write: never blocks, even if nobody reads.
    printf '%s\n' "$cmd" 1<>"$dir/$name.in"
    case $cmd in
    quit|exit)
        _tpmd_wait_gone "$(tpmd_pid "$name" "$dir")" \
            "--file-prefix $(_tpmd_read "$dir/$name.prefix") " "$to"
        rc=$? ;;
    *)
        tpmd_wait_log "$name" "$dir" 'testpmd> ' "$to" "$off"
        rc=$? ;;
    esac
    tail -c +$((off + 1)) "$dir/$name.log" | tr -d '\r' | sed 's/testpmd> $//'
    return $rc
}

# tpmd_port_stat NAME DIR PORT FIELD
#   Print one counter from "show port stats PORT".  FIELD is the label as
#   testpmd prints it: RX-packets RX-bytes RX-missed RX-errors RX-nombuf
#   TX-packets TX-bytes TX-errors (case-insensitive).
tpmd_port_stat () {
    tpmd_cmd "$1" "$2" "show port stats $3" | awk -v f="$4:" '
        /NIC statistics for port/ { in_s = 1 }
        in_s { for (i = 1; i < NF; i++) if (tolower($i) == tolower(f)) { print $(i+1); exit } }'
}

# tpmd_port_counts NAME DIR [PORT=0]: print "RX_PACKETS TX_PACKETS".
tpmd_port_counts () {
    tpmd_cmd "$1" "$2" "show port stats ${3:-0}" | awk '
        /NIC statistics for port/ { in_s = 1 }
        in_s && $1 == "RX-packets:" { rx = $2 }
        in_s && $1 == "TX-packets:" { tx = $2 }
        END { print (rx == "" ? "?" : rx), (tx == "" ? "?" : tx) }'
}

# tpmd_xstat NAME DIR PORT XSTAT_NAME: print one extended statistic
#   (e.g. rx_good_packets, tx_q0_good_packets, rx_q0_size_64_packets).
tpmd_xstat () {
    tpmd_cmd "$1" "$2" "show port xstats $3" |
        awk -v n="$4:" '$1 == n { print $2; found = 1; exit } END { exit !found }'
}

# tpmd_link_up NAME DIR PORT [TIMEOUT_S=30]: wait until "show port info
#   PORT" reports "Link status: up".
tpmd_link_up () {
    local end
    end=$(( $(_tpmd_now) + ${4:-30} ))
    while :; do
        tpmd_cmd "$1" "$2" "show port info $3" 2>/dev/null |
            grep -q 'Link status: up' && return 0
        tpmd_running "$1" "$2" || return 2
        [ "$(_tpmd_now)" -lt "$end" ] || return 1
        sleep 1
    done
}

# tpmd_stop NAME DIR
#   Stop that instance only: "quit" via the fifo, then SIGTERM, then
#   SIGKILL; kill its keeper; remove its fifo, pid files and the DPDK
#   runtime dir (<rundir>/<file-prefix>).  The log is kept.
#   Returns 0 if testpmd exited by itself on "quit" or SIGTERM.
tpmd_stop () {
    local name="$1" dir="$2" pid kpid prefix pat rc=0
    pid=$(tpmd_pid "$name" "$dir")
    kpid=$(_tpmd_read "$dir/$name.keeper.pid")
    prefix=$(_tpmd_read "$dir/$name.prefix")
    pat="--file-prefix $prefix "   # args are space-joined, with a trailing space
    if [ -n "$pid" ] && _tpmd_alive "$pid" "$pat"; then
        printf 'stop\nquit\n' 1<>"$dir/$name.in" 2>/dev/null
        if ! _tpmd_wait_gone "$pid" "$pat" "${TPMD_STOP_TIMEOUT:-10}"; then
            kill -TERM "$pid" 2>/dev/null
            if ! _tpmd_wait_gone "$pid" "$pat" 5; then
                rc=1
                kill -KILL "$pid" 2>/dev/null
                _tpmd_wait_gone "$pid" "$pat" 5
            fi
        fi
    fi
    if [ -n "$kpid" ] && _tpmd_alive "$kpid" "sleep 2147483647"; then
        kill -TERM "$kpid" 2>/dev/null
        _tpmd_wait_gone "$kpid" "sleep 2147483647" 5
    fi
    rm -f "$dir/$name.in" "$dir/$name.pid" "$dir/$name.keeper.pid"
    [ -n "$prefix" ] && rm -rf "$(_tpmd_rundir_root)/${prefix:?}"
    rm -f "$dir/$name.prefix" "$dir/$name.fwd"
    return $rc
}

# tpmd_stop_all DIR: tpmd_stop every instance that has a pid file in DIR
#   (for cleanup traps / autotest on_exit).
tpmd_stop_all () {
    local f n
    for f in "$1"/*.pid; do
        [ -e "$f" ] || continue
        case $f in *.keeper.pid) continue ;; esac
        n=${f##*/}; n=${n%.pid}
        tpmd_stop "$n" "$1"
    done
}

# --- CPUs -----------------------------------------------------------------

# tpmd_cpu SLOT: print the CPU number of slot 0 or 1, the first two CPUs
#   this process may run on (the CPUs tpmd_start places lcores on).  With a
#   single CPU both slots print it.  Use it to keep another busy thread off
#   testpmd's forwarding lcore: TPMD_FWD_CPU=0 and ovs-vhost-fwd
#   --cpu=$(tpmd_cpu 1).
tpmd_cpu () {
    local cpus
    cpus=$(_tpmd_cpus)
    if [ "${1:-0}" = 1 ] && [ "${cpus#* }" != "$cpus" ]; then
        echo "${cpus#* }"
    else
        echo "${cpus%% *}"
    fi
}

# tpmd_sum NAME DIR FIELD N_PORTS: print FIELD of "show port stats"
#   (RX-packets, TX-packets, ...) summed over ports 0..N_PORTS-1.
tpmd_sum () {
    local p=0 sum=0 v
    while [ $p -lt "$4" ]; do
        v=$(tpmd_port_stat "$1" "$2" $p "$3")
        [ -n "$v" ] || { echo "?"; return 1; }
        sum=$((sum + v))
        p=$((p + 1))
    done
    echo $sum
}

# --- ovs-vhost-fwd beside testpmd -----------------------------------------
#
# ovs-vhost-fwd instances, by NAME in DIR, like testpmd's:
#   DIR/NAME.log      stdout+stderr of ovs-vhost-fwd
#   DIR/NAME.fwdpid   its pid (not *.pid: tpmd_stop_all owns those)
# It prints "stats PORT k=v ..." lines then "stats done" on SIGUSR1, pauses
# txonly generation on SIGUSR2 ("pmd: txonly paused"), and on SIGTERM
# prints "total PORT k=v ..." lines and "exiting".
#
# Tunables: VFWD_BIN   the binary (default: ovs-vhost-fwd, from PATH)

VFWD_BIN=${VFWD_BIN:-ovs-vhost-fwd}

# vfwd_start NAME DIR [ovs-vhost-fwd args...]: start one in the background.
vfwd_start () {
    local name="$1" dir="$2"
    shift 2
    mkdir -p "$dir" || return 2
    if vfwd_running "$name" "$dir"; then
        echo "vfwd_start: $name already running in $dir" >&2; return 2
    fi
    echo "$VFWD_BIN $*" > "$dir/$name.cmdline"
    "$VFWD_BIN" "$@" > "$dir/$name.log" 2>&1 < /dev/null \
        3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
    echo $! > "$dir/$name.fwdpid"
}

# vfwd_pid NAME DIR: print its pid.
vfwd_pid () { _tpmd_read "$2/$1.fwdpid"; }

# vfwd_running NAME DIR: true if it is alive.
vfwd_running () { _tpmd_alive "$(vfwd_pid "$1" "$2")" "${VFWD_BIN##*/}"; }

# vfwd_count NAME DIR REGEX: how many lines of its log match (0 while the
#   log does not exist yet: vfwd_start's child creates it, and on a loaded
#   machine it may not have run yet).
vfwd_count () {
    local n
    n=$(grep -Ec -- "$3" "$2/$1.log" 2>/dev/null)
    echo "${n:-0}"
}

# vfwd_wait_log NAME DIR REGEX [TIMEOUT_S=30] [MIN_COUNT=1]: wait until at
#   least MIN_COUNT lines of the log match REGEX.  Returns 1 on timeout, 2
#   if ovs-vhost-fwd exited first.
vfwd_wait_log () {
    local end
    end=$(( $(_tpmd_now) + ${4:-30} ))
    while [ "$(vfwd_count "$1" "$2" "$3")" -lt "${5:-1}" ]; do
        vfwd_running "$1" "$2" || return 2
        [ "$(_tpmd_now)" -lt "$end" ] || return 1
        _tpmd_nap
    done
}

# vfwd_wait_queues NAME DIR PORT QUEUE_PAIRS [TIMEOUT_S=60]: wait until
#   every vring of PORT's first QUEUE_PAIRS pairs is enabled.
vfwd_wait_queues () {
    local q=0
    while [ $q -lt $((2 * $4)) ]; do
        vfwd_wait_log "$1" "$2" "^$3: queue $q enabled" "${5:-60}" || return $?
        q=$((q + 1))
    done
}

# vfwd_dump NAME DIR: make it print its statistics, and wait for them.
vfwd_dump () {
    local n
    n=$(vfwd_count "$1" "$2" '^stats done')
    kill -USR1 "$(vfwd_pid "$1" "$2")" 2>/dev/null || return 2
    vfwd_wait_log "$1" "$2" '^stats done' 10 $((n + 1))
}

# vfwd_field NAME DIR KIND PORT FIELD: print FIELD of the last "KIND PORT"
#   line of the log (KIND: stats, total, "total engine").
vfwd_field () {
    grep -- "^$3 $4 " "$2/$1.log" | tail -1 | tr ' ' '\n' |
        sed -n "s/^$5=//p"
}

# vfwd_stat NAME DIR PORT FIELD: print a current counter (rx, tx, drop,
#   verify_errors, ...) of PORT (p0, p1, ...).
vfwd_stat () {
    vfwd_dump "$1" "$2" >/dev/null || return $?
    vfwd_field "$1" "$2" stats "$3" "$4"
}

# vfwd_total NAME DIR PORT FIELD: print a counter from the totals it
#   printed on exit.
vfwd_total () { vfwd_field "$1" "$2" total "$3" "$4"; }

# vfwd_default_features_but BIT...: print ovs-vhost-fwd's default feature
#   offer (from --help) with the given bits cleared, for --features=.
vfwd_default_features_but () {
    local f b
    f=$("$VFWD_BIN" --help | sed -n 's/.*(default \(0x[0-9a-fA-F]*\)).*/\1/p' | head -1)
    [ -n "$f" ] || return 1
    for b in "$@"; do f=$((f & ~(1 << b))); done
    printf '0x%x\n' "$f"
}

# vfwd_has_features NAME DIR PORT FEATURE...: true if PORT negotiated every
#   FEATURE (names as ovs-vhost-fwd prints them: ring_packed, in_order,
#   mrg_rxbuf, ...), according to the last "PORT: state" line of the log
#   (vfwd_dump and vfwd_stat print one).  Names a missing one on stderr.
vfwd_has_features () {
    local name="$1" dir="$2" port="$3" have f
    shift 3
    have=" $(grep -- "^$port: state " "$dir/$name.log" | tail -1 |
             sed -n 's/.* features=[^ ]* (\([^)]*\)).*/\1/p') "
    for f in "$@"; do
        case $have in
        *" $f "*) ;;
        *) echo "vfwd_has_features: $name $port did not negotiate $f" \
                "(has:$have)" >&2; return 1 ;;
        esac
    done
}

# vfwd_vring_packets NAME DIR PORT VRING: print the engine's packet count
#   for one vring, from the totals printed on exit (0 if none).
vfwd_vring_packets () {
    local v
    v=$(grep -- "^total engine $3 vring=$4 " "$2/$1.log" | tail -1 |
        tr ' ' '\n' | sed -n 's/^packets=//p')
    echo "${v:-0}"
}

# vfwd_pause NAME DIR: stop (or restart) txonly generation, and wait until
#   no generated packet is still on its way.
vfwd_pause () {
    local n
    n=$(vfwd_count "$1" "$2" '^pmd: txonly (paused|resumed)')
    kill -USR2 "$(vfwd_pid "$1" "$2")" 2>/dev/null || return 2
    vfwd_wait_log "$1" "$2" '^pmd: txonly (paused|resumed)' 10 $((n + 1))
}

# vfwd_stop NAME DIR: SIGTERM (it prints its totals), then SIGKILL after
#   10 s.  Returns 0 if it exited by itself after printing "exiting".
vfwd_stop () {
    local pid pat rc=0
    pid=$(vfwd_pid "$1" "$2")
    pat=${VFWD_BIN##*/}
    if [ -n "$pid" ] && _tpmd_alive "$pid" "$pat"; then
        kill -TERM "$pid" 2>/dev/null
        if ! _tpmd_wait_gone "$pid" "$pat" 10; then
            rc=1
            kill -KILL "$pid" 2>/dev/null
            _tpmd_wait_gone "$pid" "$pat" 5
        fi
    fi
    rm -f "$2/$1.fwdpid"
    [ $rc = 0 ] && grep -q '^exiting' "$2/$1.log" 2>/dev/null
}

# vfwd_stop_all DIR: vfwd_stop every instance with a pid file in DIR.
vfwd_stop_all () {
    local f n
    for f in "$1"/*.fwdpid; do
        [ -e "$f" ] || continue
        n=${f##*/}; n=${n%.fwdpid}
        vfwd_stop "$n" "$1"
    done
}

# tpmd_others_busy: the median number of tasks runnable at once, besides
# the one sampling, over 10 samples in a second; for benchmarks, taken
# while nothing of theirs runs.  0 or 1 on an idle machine; more means
# someone else is using the CPUs and the figures are not to be trusted.
tpmd_others_busy () {
    local i=0
    while [ $i -lt 10 ]; do
        cut -d' ' -f4 /proc/loadavg
        sleep 0.1
        i=$((i + 1))
    done | awk -F/ '{ print $1 - 1 }' | sort -n | sed -n 5p
}
