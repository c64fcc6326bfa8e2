package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// TestKubernetesModeCapacityMemory runs the capacity load in Kubernetes mode, as the
// DaemonSet runs vrrpd: 255 instances (every router ID) at 100 ms advertisements, spread
// over two nodes, and checks that each vrrpd's peak resident set stays within the memory
// its DaemonSet requests (controller.DefaultVrrpdResources, which the limit exceeds with
// room to spare). It logs the peak and the CPU time of each daemon over 20 s, the figures
// the requests were set from. routerSharing: PerService, since the load is 255 instances
// (with shared routers the same VIPs would be two routers).
func TestKubernetesModeCapacityMemory(t *testing.T) {
	ctx := context.Background()
	lab, ns := groupLab(t, v1alpha1.KeepalivedGroupSpec{VRRPVersion: 3, AdvertInterval: &metav1.Duration{Duration: 100 * time.Millisecond},
		RouterSharing: v1alpha1.RouterSharingPerService})
	h1, h2 := lab.Host("h1"), lab.Host("h2")
	vips := capacityServices(t, ns)

	var ds appsv1.DaemonSet
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: groupName + "-vrrpd"}, &ds); err != nil {
		t.Fatal(err)
	}
	request := ds.Spec.Template.Spec.Containers[0].Resources.Requests.Memory()
	pids := map[string]int{}
	for name, d := range startGroupDaemons(t, ns, h1, h2) {
		pids[name] = d.Pid()
	}
	vrrpdtest.WaitFor(t, time.Minute, "every VIP held by one node", func() bool {
		for _, v := range vips {
			if len(vrrpdtest.Holders(t, v, h1, h2)) != 1 {
				return false
			}
		}
		return true
	})
	cpu0 := map[string]float64{}
	for name, pid := range pids {
		cpu0[name] = cpuSeconds(t, pid)
	}
	time.Sleep(20 * time.Second)
	for name, pid := range pids {
		peak := procStatusKiB(t, pid, "VmHWM") * 1024
		t.Logf("%s: peak RSS %.1f MiB, CPU %.2f s over 20 s", name, peak/(1<<20), cpuSeconds(t, pid)-cpu0[name])
		if peak > request.AsApproximateFloat64() {
			t.Errorf("%s: peak RSS %.1f MiB exceeds the DaemonSet's memory request %s", name, peak/(1<<20), request)
		}
	}
}

// procStatusKiB reads one "Name: N kB" line of /proc/<pid>/status.
func procStatusKiB(t testing.TB, pid int, name string) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				if kib, err := strconv.ParseFloat(f[0], 64); err == nil {
					return kib
				}
			}
		}
	}
	t.Fatalf("no %s in /proc/%d/status", name, pid)
	return 0
}

// cpuSeconds is the user and system time of process pid (/proc/<pid>/stat fields 14, 15).
func cpuSeconds(t testing.TB, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndex(s, ")")+1:])
	if len(f) < 13 {
		t.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ
}
