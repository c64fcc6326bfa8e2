package metrics

// The Go runtime's go_* and the process' process_* metrics, under client_golang's names,
// types and help texts, so that the dashboards written for its Go and process collectors
// keep working.

import (
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// collectGo adds go_info, go_goroutines, go_threads, go_gc_duration_seconds, the GC's
// settings and the go_memstats_* families.
func collectGo(e *exposition) {
	e.family("go_info", typeGauge, "Information about the Go environment.", "version").add(1, runtime.Version())
	e.family("go_goroutines", typeGauge, "Number of goroutines that currently exist.").add(float64(runtime.NumGoroutine()))
	threads, _ := runtime.ThreadCreateProfile(nil)
	e.family("go_threads", typeGauge, "Number of OS threads created.").add(float64(threads))
	e.family("go_sched_gomaxprocs_threads", typeGauge,
		"The current runtime.GOMAXPROCS setting, or the number of operating system threads that can execute user-level Go code simultaneously. Sourced from /sched/gomaxprocs:threads.").
		add(float64(runtime.GOMAXPROCS(0)))

	rm := []rtmetrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	rtmetrics.Read(rm)
	if rm[0].Value.Kind() == rtmetrics.KindUint64 {
		e.family("go_gc_gogc_percent", typeGauge,
			"Heap size target percentage configured by the user, otherwise 100. This value is set by the GOGC environment variable, and the runtime/debug.SetGCPercent function. Sourced from /gc/gogc:percent.").
			add(float64(rm[0].Value.Uint64()))
	}
	if rm[1].Value.Kind() == rtmetrics.KindUint64 {
		e.family("go_gc_gomemlimit_bytes", typeGauge,
			"Go runtime memory limit configured by the user, otherwise math.MaxInt64. This value is set by the GOMEMLIMIT environment variable, and the runtime/debug.SetMemoryLimit function. Sourced from /gc/gomemlimit:bytes.").
			add(float64(rm[1].Value.Uint64()))
	}

	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)
	pauses := e.family("go_gc_duration_seconds", typeSummary,
		"A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.")
	for i, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		pauses.samples = append(pauses.samples, sample{extra: `quantile="` + q + `"`, value: gc.PauseQuantiles[i].Seconds()})
	}
	pauses.samples = append(pauses.samples,
		sample{suffix: "_sum", value: gc.PauseTotal.Seconds()},
		sample{suffix: "_count", value: float64(gc.NumGC)})

	// ReadMemStats stops the world for a few microseconds; once per scrape is nothing.
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for _, m := range []struct {
		name, typ, help string
		v               float64
	}{
		{"alloc_bytes", typeGauge, "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.", float64(ms.Alloc)},
		{"alloc_bytes_total", typeCounter, "Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes.", float64(ms.TotalAlloc)},
		{"buck_hash_sys_bytes", typeGauge, "Number of bytes used by the profiling bucket hash table. Equals to /memory/classes/profiling/buckets:bytes.", float64(ms.BuckHashSys)},
		{"frees_total", typeCounter, "Total number of heap objects frees. Equals to /gc/heap/frees:objects + /gc/heap/tiny/allocs:objects.", float64(ms.Frees)},
		{"gc_sys_bytes", typeGauge, "Number of bytes used for garbage collection system metadata. Equals to /memory/classes/metadata/other:bytes.", float64(ms.GCSys)},
		{"heap_alloc_bytes", typeGauge, "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.", float64(ms.HeapAlloc)},
		{"heap_idle_bytes", typeGauge, "Number of heap bytes waiting to be used. Equals to /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", float64(ms.HeapIdle)},
		{"heap_inuse_bytes", typeGauge, "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes", float64(ms.HeapInuse)},
		{"heap_objects", typeGauge, "Number of currently allocated objects. Equals to /gc/heap/objects:objects.", float64(ms.HeapObjects)},
		{"heap_released_bytes", typeGauge, "Number of heap bytes released to OS. Equals to /memory/classes/heap/released:bytes.", float64(ms.HeapReleased)},
		{"heap_sys_bytes", typeGauge, "Number of heap bytes obtained from system. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes + /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", float64(ms.HeapSys)},
		{"last_gc_time_seconds", typeGauge, "Number of seconds since 1970 of last garbage collection.", float64(ms.LastGC) / 1e9},
		{"mallocs_total", typeCounter, "Total number of heap objects allocated, both live and gc-ed. Semantically a counter version for go_memstats_heap_objects gauge. Equals to /gc/heap/allocs:objects + /gc/heap/tiny/allocs:objects.", float64(ms.Mallocs)},
		{"mcache_inuse_bytes", typeGauge, "Number of bytes in use by mcache structures. Equals to /memory/classes/metadata/mcache/inuse:bytes.", float64(ms.MCacheInuse)},
		{"mcache_sys_bytes", typeGauge, "Number of bytes used for mcache structures obtained from system. Equals to /memory/classes/metadata/mcache/inuse:bytes + /memory/classes/metadata/mcache/free:bytes.", float64(ms.MCacheSys)},
		{"mspan_inuse_bytes", typeGauge, "Number of bytes in use by mspan structures. Equals to /memory/classes/metadata/mspan/inuse:bytes.", float64(ms.MSpanInuse)},
		{"mspan_sys_bytes", typeGauge, "Number of bytes used for mspan structures obtained from system. Equals to /memory/classes/metadata/mspan/inuse:bytes + /memory/classes/metadata/mspan/free:bytes.", float64(ms.MSpanSys)},
		{"next_gc_bytes", typeGauge, "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.", float64(ms.NextGC)},
		{"other_sys_bytes", typeGauge, "Number of bytes used for other system allocations. Equals to /memory/classes/other:bytes.", float64(ms.OtherSys)},
		{"stack_inuse_bytes", typeGauge, "Number of bytes obtained from system for stack allocator in non-CGO environments. Equals to /memory/classes/heap/stacks:bytes.", float64(ms.StackInuse)},
		{"stack_sys_bytes", typeGauge, "Number of bytes obtained from system for stack allocator. Equals to /memory/classes/heap/stacks:bytes + /memory/classes/os-stacks:bytes.", float64(ms.StackSys)},
		{"sys_bytes", typeGauge, "Number of bytes obtained from system. Equals to /memory/classes/total:byte.", float64(ms.Sys)},
	} {
		e.family("go_memstats_"+m.name, m.typ, m.help).add(m.v)
	}
}

// collectProcess adds the process_* families from /proc/self; those it cannot read are
// left out, as client_golang's process collector leaves them.
func collectProcess(e *exposition) {
	if f, ok := procStat(); ok {
		// Fields after the command's closing parenthesis, from 3 (state) on: utime 14,
		// stime 15, starttime 22, vsize 23, rss 24 (pages).
		field := func(n int) float64 {
			v, _ := strconv.ParseFloat(f[n-3], 64)
			return v
		}
		e.family("process_cpu_seconds_total", typeCounter, "Total user and system CPU time spent in seconds.").
			add((field(14) + field(15)) / userHZ)
		if boot, ok := bootTime(); ok {
			e.family("process_start_time_seconds", typeGauge, "Start time of the process since unix epoch in seconds.").
				add(boot + field(22)/userHZ)
		}
		e.family("process_virtual_memory_bytes", typeGauge, "Virtual memory size in bytes.").add(field(23))
		e.family("process_resident_memory_bytes", typeGauge, "Resident memory size in bytes.").
			add(field(24) * float64(os.Getpagesize()))
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		e.family("process_open_fds", typeGauge, "Number of open file descriptors.").add(float64(len(fds)))
	}
	if in, out, ok := ipOctets(); ok {
		e.family("process_network_receive_bytes_total", typeCounter, "Number of bytes received by the process over the network.").add(in)
		e.family("process_network_transmit_bytes_total", typeCounter, "Number of bytes sent by the process over the network.").add(out)
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		e.family("process_max_fds", typeGauge, "Maximum number of open file descriptors.").add(rlimit(lim.Cur))
	}
	if syscall.Getrlimit(syscall.RLIMIT_AS, &lim) == nil {
		e.family("process_virtual_memory_max_bytes", typeGauge, "Maximum amount of virtual memory available in bytes.").add(rlimit(lim.Cur))
	}
}

// userHZ is the unit of /proc's CPU times: 100 on every Linux platform Go supports.
const userHZ = 100

// rlimit is a limit as a metric value: -1 for none, as client_golang reports it.
func rlimit(v uint64) float64 {
	if v == ^uint64(0) { // RLIM_INFINITY
		return -1
	}
	return float64(v)
}

// procStat is /proc/self/stat's fields after the command name (which may hold spaces).
func procStat() ([]string, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	f := strings.Fields(s[i+1:])
	return f, len(f) >= 22
}

// bootTime is the system's boot time in Unix seconds, /proc/stat's btime.
func bootTime() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return n, err == nil
		}
	}
	return 0, false
}

// ipOctets is the IP bytes received and sent in the process' network namespace, from
// /proc/self/net/netstat's IpExt InOctets and OutOctets, where client_golang reads them.
func ipOctets() (in, out float64, ok bool) {
	b, err := os.ReadFile("/proc/self/net/netstat")
	if err != nil {
		return 0, 0, false
	}
	lines := strings.Split(string(b), "\n")
	for i := 0; i+1 < len(lines); i++ {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || names[0] != "IpExt:" || len(values) != len(names) || values[0] != "IpExt:" {
			continue
		}
		var found int
		for j, n := range names {
			v, err := strconv.ParseFloat(values[j], 64)
			switch {
			case err != nil:
			case n == "InOctets":
				in, found = v, found+1
			case n == "OutOctets":
				out, found = v, found+1
			}
		}
		return in, out, found == 2
	}
	return 0, 0, false
}
