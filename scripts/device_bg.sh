#!/usr/bin/env bash
# Run long commands on a device machine so that they outlive the call that started them (the
# device tool keeps a setsid process running while the machine stays warm), and collect them in a
# later call.
#
#   scripts/device_bg.sh start DIR NAME COMMAND...   # returns at once; log DIR/NAME.log, status DIR/NAME.rc
#   scripts/device_bg.sh wait DIR SECONDS NAME...    # until every NAME has ended or SECONDS passed
#
# `wait` prints one progress line every 15 s (POLL: other seconds; the last line of each log) and exits 0 when every
# NAME ended with status 0, 1 when one failed, 3 when one is still running at the deadline.
set -u
mode=${1:?usage: device_bg.sh start|wait DIR ...}
dir=${2:?DIR}
mkdir -p "$dir"
case "$mode" in
start)
    name=${3:?NAME}; shift 3
    rm -f "$dir/$name.rc"
    setsid bash -c '"${@:3}" > "$1/$2.log" 2>&1; echo $? > "$1/$2.rc"' _ "$dir" "$name" "$@" \
        < /dev/null > /dev/null 2>&1 &
    echo "started $name (log $dir/$name.log)"
    ;;
wait)
    seconds=${3:?SECONDS}; shift 3
    end=$((SECONDS + seconds))
    while :; do
        pending=0; failed=0; line="$(date -u +%H:%M:%S)"
        for name in "$@"; do
            if [ -f "$dir/$name.rc" ]; then
                rc=$(cat "$dir/$name.rc"); line="$line | $name rc=$rc"; [ "$rc" = 0 ] || failed=1
            else
                pending=1; line="$line | $name: $(tail -n 1 "$dir/$name.log" 2>/dev/null | cut -c1-100)"
            fi
        done
        echo "$line"
        [ $pending = 0 ] && exit $failed
        [ $SECONDS -ge $end ] && exit 3
        sleep "${POLL:-15}"
    done
    ;;
*)
    echo "device_bg.sh: unknown mode $mode (start|wait)" >&2; exit 2 ;;
esac
