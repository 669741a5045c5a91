#!/bin/sh
# cgbench.sh: the guest side of scripts/bench-cgroups, run by scripts/numavm
# (busybox sh, /data on PATH with numascope, interleave, cgreads, cgscrape and
# bareserve).
#
# Usage: cgbench.sh ROUNDS N:SCRAPES:INTERVAL_MS...
#
# For each N: makes N cgroups under the cgroup v2 root with the memory and
# cpuset controllers on, in two levels as kubepods has them (a tenth of them
# pods, at least one, the rest their containers), and starts a process
# holding 2 MiB, interleaved over the nodes, in every fifth container. Then
# starts two exporters, `numascope exporter --cgroups` (its series cap
# raised, so that all N are exported) and `numascope exporter` without
# --cgroups, and runs ROUNDS rounds of three arms, each SCRAPES scrapes or
# passes one every INTERVAL_MS:
#   with   cgscrape of the --cgroups exporter: its CPU (all threads) per scrape
#   base   the same of the exporter without --cgroups
#   bare-http  bareserve (testdata/bench/bareserve.c), scraped the same way: per
#          request it preads the same four files of every cgroup (kept open)
#          and writes a body of a --cgroups scrape captured at start: the
#          floor of reading them and serving them over HTTP
#   bare   cgreads over the same tree: its CPU per pass
# Where /data/numascope-old is (another build, say main's), also the arm
# with-old: it, with --cgroups, scraped the same way.
# With CGBENCH_EXTRA=1, also the arm with-gmp1 (the --cgroups exporter with
# GOMAXPROCS=1) and, where /data/exporter.test is, BenchmarkCgroupScrape over
# this cgroupfs with a CPU profile, printed in base64 between "P-BEGIN N" and
# "P-END" lines.
# Prints "R N ARM CPU_US WALL_US BYTES CGROUPS" per arm and round (bare:
# "R N bare CPU_US - BYTES FILES"), then removes the cgroups.
#
# With CGBENCH_V1=1, cgroup v1 as a hybrid distribution lays it out (tmpfs at
# /sys/fs/cgroup, the memory and cpuset controllers each on a v1 hierarchy,
# cgroup2 at unified): every cgroup is made at the same path in both, the
# cpusets with their parent's CPUs and nodes (cgroup.clone_children), and
# each holder joins both. bareserve and cgreads read the six files the
# exporter reads per cgroup there: memory.numa_stat, memory.stat and
# cgroup.procs of the memory cgroup, cgroup.procs, cpuset.effective_cpus and
# cpuset.effective_mems of the cpuset one.
cg=/sys/fs/cgroup
rounds=$1
shift
die() { echo "cgbench: $*" >&2; exit 1; }
ip link set lo up
ulimit -n 65536 # bareserve keeps four files per cgroup open (six on v1)
if [ "${CGBENCH_V1:-}" = 1 ]; then
	umount $cg && mount -t tmpfs tmpfs $cg || die "cannot put a tmpfs at $cg"
	mkdir $cg/memory $cg/cpuset $cg/unified
	mount -t cgroup -o memory cgroup $cg/memory || die "cannot mount the v1 memory hierarchy"
	mount -t cgroup -o cpuset cgroup $cg/cpuset || die "cannot mount the v1 cpuset hierarchy"
	mount -t cgroup2 cgroup2 $cg/unified || die "cannot mount cgroup2 at $cg/unified"
	echo 1 >$cg/cpuset/cgroup.clone_children
	mem=$cg/memory
	mkcg() { mkdir $mem/$1 && mkdir $cg/cpuset/$1; }
	join() { echo "echo \$\$ >$mem/$1/cgroup.procs && echo \$\$ >$cg/cpuset/$1/cgroup.procs"; }
	cgof() { sed -n 's/^[0-9]*:memory://p' /proc/$1/cgroup; }
	usage=memory.usage_in_bytes
	files() { for d in $(cd $mem && find . -mindepth 1 -type d); do d=${d#./}; echo $mem/$d/memory.numa_stat $mem/$d/memory.stat $mem/$d/cgroup.procs $cg/cpuset/$d/cgroup.procs $cg/cpuset/$d/cpuset.effective_cpus $cg/cpuset/$d/cpuset.effective_mems; done; }
	rmcg() { rmdir $mem/pod*/ctr* $mem/pod* $cg/cpuset/pod*/ctr* $cg/cpuset/pod* 2>/dev/null; ls -d $mem/pod* $cg/cpuset/pod* >/dev/null 2>&1 && return 1; return 0; }
	cgreads_tree="$mem"
	cgreads_cpuset=$cg/cpuset
else
	grep -qw memory $cg/cgroup.controllers || die "no memory controller in $cg/cgroup.controllers: $(cat $cg/cgroup.controllers)"
	echo "+memory +cpuset" >$cg/cgroup.subtree_control || die "cannot enable +memory +cpuset in $cg"
	mem=$cg
	mkcg() { mkdir $cg/$1 && case $1 in */*) ;; *) echo "+memory +cpuset" >$cg/$1/cgroup.subtree_control ;; esac; }
	join() { echo "echo \$\$ >$cg/$1/cgroup.procs"; }
	cgof() { sed -n 's/^0:://p' /proc/$1/cgroup; }
	usage=memory.current
	files() { for d in $(find $cg -mindepth 1 -type d); do echo $d/memory.numa_stat $d/memory.stat $d/cpuset.cpus.effective $d/cpuset.mems.effective; done; }
	rmcg() { rmdir $cg/pod*/ctr* $cg/pod* 2>/dev/null; ls -d $cg/pod* >/dev/null 2>&1 && return 1; return 0; }
	cgreads_tree=$cg
	cgreads_cpuset=
fi
ready() { # ready PORT: wait for /metrics
	for _ in $(seq 300); do wget -q -O /dev/null "http://127.0.0.1:$1/metrics" 2>/dev/null && return 0; sleep 0.2; done
	die "the exporter on port $1 did not answer"
}
for spec in "$@"; do
	n=${spec%%:*} rest=${spec#*:}
	scrapes=${rest%%:*} ms=${rest#*:}
	pods=$((n / 10))
	[ $pods -lt 1 ] && pods=1
	holders=
	i=0
	while [ $i -lt $n ]; do
		if [ $i -lt $pods ]; then
			mkcg pod$i || die "cannot make pod$i"
		else
			d=pod$((i % pods))/ctr$i
			mkcg $d || die "cannot make $d"
			if [ $((i % 5)) -eq 1 ]; then
				sh -c "$(join $d) && exec interleave --mb 2 --hold 100000 --lead 0 --linger 0 --out /dev/null" >/dev/null 2>&1 &
				holders="$holders $!"
			fi
		fi
		i=$((i + 1))
	done
	for p in $holders; do # each holder has touched its 2 MiB
		for _ in $(seq 600); do
			d=$(cgof $p 2>/dev/null)
			[ -n "$d" ] && [ "$(cat $mem$d/$usage 2>/dev/null || echo 0)" -ge 2097152 ] && break
			sleep 0.1
		done
	done
	echo "# $n cgroups ($pods pods), $(echo $holders | wc -w) holding 2 MiB each; $(grep MemFree /proc/meminfo)" >&2
	numascope exporter --listen 127.0.0.1:9864 --cgroups --cgroup-max-series 100000000 >/tmp/with.err 2>&1 &
	with=$!
	numascope exporter --listen 127.0.0.1:9865 >/tmp/base.err 2>&1 &
	base=$!
	pids="$with $base"
	ready 9864
	ready 9865
	wget -q -O /tmp/body http://127.0.0.1:9864/metrics || die "cannot capture a scrape"
	info=$(grep -c '^numascope_cgroup_cpuset_info{' /tmp/body)
	[ "$info" -eq $n ] || die "the scrape has the cpuset of $info cgroups of $n"
	bareserve /tmp/body $(files) 9866 >/tmp/bareserve.err 2>&1 &
	bhttp=$!
	pids="$pids $bhttp"
	ready 9866
	if [ -x /data/numascope-old ]; then
		numascope-old exporter --listen 127.0.0.1:9868 --cgroups --cgroup-max-series 100000000 >/tmp/old.err 2>&1 &
		old=$!
		pids="$pids $old"
		ready 9868
	fi
	if [ "${CGBENCH_EXTRA:-}" = 1 ]; then
		GOMAXPROCS=1 numascope exporter --listen 127.0.0.1:9867 --cgroups --cgroup-max-series 100000000 >/tmp/with1.err 2>&1 &
		with1=$!
		pids="$pids $with1"
		ready 9867
	fi
	r=1
	while [ $r -le $rounds ]; do
		echo "R $n with $(cgscrape -url http://127.0.0.1:9864/metrics -pid $with -n $scrapes -interval ${ms}ms)"
		[ -n "${old:-}" ] && echo "R $n with-old $(cgscrape -url http://127.0.0.1:9868/metrics -pid $old -n $scrapes -interval ${ms}ms)"
		[ -n "${with1:-}" ] && echo "R $n with-gmp1 $(cgscrape -url http://127.0.0.1:9867/metrics -pid $with1 -n $scrapes -interval ${ms}ms)"
		echo "R $n base $(cgscrape -url http://127.0.0.1:9865/metrics -pid $base -n $scrapes -interval ${ms}ms)"
		echo "R $n bare-http $(cgscrape -url http://127.0.0.1:9866/metrics -pid $bhttp -n $scrapes -interval ${ms}ms)"
		set -- $(cgreads $scrapes $cgreads_tree $ms $cgreads_cpuset)
		echo "R $n bare $1 - $2 $3"
		r=$((r + 1))
	done
	with1= old=
	if [ "${CGBENCH_EXTRA:-}" = 1 ] && [ -x /data/exporter.test ]; then
		NUMASCOPE_BENCH_CGROUPS=$cg exporter.test -test.run '^$' -test.bench '^BenchmarkCgroupScrape$' -test.benchtime ${scrapes}x -test.cpuprofile /tmp/cg.pprof >&2
		echo "P-BEGIN $n"
		base64 /tmp/cg.pprof
		echo "P-END"
	fi
	# The exporter holds the cgroups' files open and reads them again at
	# offset 0: what it exports must follow the kernel. The first holder's
	# cgroup has 2 MiB of anon memory until its process exits.
	first=${holders# }
	first=${first%% *}
	hcg=$(cgof $first)
	anon() { wget -q -O - http://127.0.0.1:9864/metrics | awk -v l="{cgroup=\"$hcg\"," 'index($0, "numascope_cgroup_memory_bytes" l) == 1 && /type="anon"/ {s += $2} END {printf "%d", s}'; }
	a0=$(anon)
	kill $holders
	wait $holders 2>/dev/null
	a1=$(anon)
	echo "# $hcg anon bytes exported: $a0 with its process, $a1 after it exited" >&2
	[ "$a0" -ge 2000000 ] && [ "$a1" -lt 1000000 ] || die "the exporter's figures of $hcg did not follow its memory.numa_stat: $a0 then $a1 bytes"
	kill $pids
	wait $pids 2>/dev/null
	for f in /tmp/with.err /tmp/base.err; do grep -v "serving metrics" $f | sed "s|^|# $f: |" >&2; done
	gone=
	for _ in $(seq 100); do
		rmcg && { gone=1; break; }
		sleep 0.2
	done
	[ -n "$gone" ] || die "cannot remove the cgroups of size $n"
done
exit 0
