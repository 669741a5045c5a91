#!/bin/sh
# scaleguest.sh: the guest side of scripts/bench-scale-vm, run by scripts/numavm
# (busybox sh, /data on PATH with numascope, plainsampler and gofloor).
#
# Usage: scaleguest.sh WINDOW_S REPS INTERVAL... -- COUNT...
#
# For each COUNT (CPUs), INTERVAL and repetition, runs in turn, confined with
# taskset to CPUs 0..COUNT-1 and GOMAXPROCS left to its default:
#   plain      plainsampler INTERVAL_NS <4 vmstat counters>
#   gofloor    gofloor INTERVAL_NS <the same>
#   numascope  numascope stat -i INTERVAL -e <the same>
# each for a warm-up (8 s for numascope: past memtrim.Settle's 3 s and its
# trim, which the emulator makes ten times slower; 2 s otherwise),
# then a window of WINDOW_S seconds between two labels, as scripts/bench-scale
# does on a real machine: whole-process CPU over the window from field 1 of
# every thread's /proc/PID/task/TID/schedstat, switches in from field 3, and
# the samples counted between the labels scaled to the window.
# Prints one line per measurement:
#   R VCPUS COUNT INTERVAL WHO REP NS_PER_SAMPLE SAMPLES THREADS RAN SWITCHES_PER_SAMPLE
# where VCPUS is the guest's online CPUs, THREADS the process's threads and
# RAN those that ran in the window.
win=$1 reps=$2
shift 2
ivs=
while [ $# -gt 0 ] && [ "$1" != -- ]; do ivs="$ivs $1"; shift; done
[ "$1" = -- ] && shift
counts=$*
die() { echo "scaleguest: $*" >&2; exit 1; }
[ -n "$ivs" ] && [ -n "$counts" ] || die "usage: scaleguest.sh WINDOW_S REPS INTERVAL... -- COUNT..."
events="pgfault pgalloc_normal pgfree numa_local"
evlist=vmstat.pgfault,vmstat.pgalloc_normal,vmstat.pgfree,vmstat.numa_local
vcpus=$(nproc)
tmp=/tmp/scale
mkdir -p $tmp

ns_of() { # 1s, 100ms, 10ms, 1ms in ns
	case $1 in
	*ms) echo $((${1%ms} * 1000000)) ;;
	*us) echo $((${1%us} * 1000)) ;;
	*s) echo $((${1%s} * 1000000000)) ;;
	*) die "interval $1: give s, ms or us" ;;
	esac
}
cs() { read -r u _ </proc/uptime; echo "${u%.*}${u#*.}"; } # uptime in centiseconds
tasks() { for t in /proc/"$1"/task/*; do read -r a _ c <"$t/schedstat" 2>/dev/null && echo "${t##*/} $a $c"; done; true; }

# measure COUNT INTERVAL WHO REP
measure() {
	n=$1 iv=$2 who=$3 rep=$4 out=$tmp/out ctl=$tmp/ctl warm=2
	set=0-$((n - 1))
	rm -f $out $ctl
	case $who in
	plain) taskset -c $set plainsampler "$(ns_of "$iv")" $events >$out 2>$tmp/err & ;;
	gofloor) taskset -c $set gofloor "$(ns_of "$iv")" $events >$out 2>$tmp/err & ;;
	numascope)
		warm=8
		(unset GOMAXPROCS; exec taskset -c $set numascope stat --ctl $ctl -i "$iv" -e $evlist >$out 2>$tmp/err) &
		;;
	esac
	pid=$!
	if [ $who = numascope ]; then
		for _ in $(seq 600); do [ -e $ctl ] && break; sleep 0.1; done
		[ -e $ctl ] || { cat $tmp/err >&2; die "numascope made no control socket in 60 s"; }
	fi
	sleep $warm
	mark() { if [ $who = numascope ]; then numascope ctl --ctl $ctl label "$1" >/dev/null; else kill -USR1 $pid; fi; }
	mark m1
	m1=$(cs)
	sleep 0.3
	w1=$(cs)
	tasks $pid >$tmp/t1
	sleep "$win"
	tasks $pid >$tmp/t2
	w2=$(cs)
	m2=$(cs)
	mark m2
	sleep 1
	kill -TERM $pid
	wait $pid || { cat $tmp/err >&2; die "$who at $iv on $n CPUs failed"; }
	s=$(awk '/label: m1$/{on=1; next} /label: m2$/ && on {print n+0; on=0} on && !/^#/ && !/^ *time /{n++}' $out)
	[ -n "$s" ] && [ "$s" -gt 0 ] || die "no samples between the labels of $who at $iv on $n CPUs"
	awk -v s="$s" -v m="$((m2 - m1))" -v w="$((w2 - w1))" -v pre="R $vcpus $n $iv $who $rep" '
		NR == FNR { c[$1] = $2; q[$1] = $3; next }
		{ tot++; dc = $2 - c[$1]; dq = $3 - q[$1]; cpu += dc; sw += dq; if (dq > 0) ran++ }
		END { k = s * w / m; printf "%s %.0f %.1f %d %d %.3f\n", pre, cpu / k, k, tot, ran + 0, sw / k }' $tmp/t1 $tmp/t2
}

echo "scaleguest: $vcpus vCPUs, nodes $(cat /sys/devices/system/node/online), window ${win} s, $reps repetition(s), intervals$ivs, CPU counts $counts" >&2
for n in $counts; do
	[ "$n" -le "$vcpus" ] || continue
	for iv in $ivs; do
		r=1
		while [ $r -le "$reps" ]; do
			for who in plain gofloor numascope; do measure "$n" "$iv" $who $r; done
			r=$((r + 1))
		done
	done
	echo "scaleguest: $n CPUs done" >&2
done
