package e2e

import (
	"fmt"
	"net/netip"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// BenchmarkKubernetesModeMemory50 is test/vrrpd's BenchmarkMemory50 in Kubernetes mode:
// 50 instances at 100 ms advertisements on two nodes, each vrrpd following its group
// through the API server (two spread Services of 25 VIPs, one instance per VIP), held for
// 20 s (VRRPD_BENCH_HOLD shortens it). It reports the larger of the two daemons' peak
// resident sets, and logs what each is made of (anonymous memory: heap, stacks, the
// runtime; file: the binary's pages), to set beside the standalone figure.
func BenchmarkKubernetesModeMemory50(b *testing.B) {
	hold := 20 * time.Second
	if d, err := time.ParseDuration(os.Getenv("VRRPD_BENCH_HOLD")); err == nil {
		hold = d
	}
	var peak float64
	for range b.N {
		peak = max(peak, kubernetesModeMemory(b, 50, hold))
	}
	b.ReportMetric(peak, "peak-rss-kubernetes-mode-vrrpd-MiB")
}

// kubernetesModeMemory runs n instances in Kubernetes mode for hold after they converge
// and returns the larger peak resident set of the two vrrpd processes, in MiB.
func kubernetesModeMemory(b *testing.B, n int, hold time.Duration) float64 {
	// PerService: the figure is per instance (shared, the 50 VIPs would be two routers).
	lab, ns := groupLab(b, v1alpha1.KeepalivedGroupSpec{VRRPVersion: 3, AdvertInterval: &metav1.Duration{Duration: 100 * time.Millisecond},
		RouterSharing: v1alpha1.RouterSharingPerService})
	h1, h2 := lab.Host("h1"), lab.Host("h2")
	var vips []netip.Addr
	for i := 1; i <= n; i++ {
		vips = append(vips, netip.MustParseAddr(fmt.Sprintf("10.99.0.%d", 12+i))) // after the hosts' .10-.12
	}
	annotations := map[string]string{v1alpha1.AnnotationGroup: ns + "/" + groupName, v1alpha1.AnnotationSpreadVIPs: "true"}
	newService(b, ns, "m0", annotations, vips[:n/2]...)
	newService(b, ns, "m1", annotations, vips[n/2:]...)
	args := daemonSetArgs(b, ns)
	environ := []string{"KUBECONFIG=" + vrrpdKubeconfig(b, ns)}
	pids := map[string]int{}
	for _, h := range []*netlab.Host{h1, h2} {
		pids[h.Name] = startNodeVrrpd(b, h, args, environ).Pid()
	}
	vrrpdtest.WaitFor(b, time.Minute, "every VIP held by one node", func() bool {
		for _, v := range vips {
			if len(vrrpdtest.Holders(b, v, h1, h2)) != 1 {
				return false
			}
		}
		return true
	})
	time.Sleep(hold)
	var peak float64
	for name, pid := range pids {
		mib := func(field string) float64 { return procStatusKiB(b, pid, field) / 1024 }
		b.Logf("vrrpd@%s (Kubernetes mode): peak %.1f MiB, now %.1f MiB = anon %.1f + file %.1f",
			name, mib("VmHWM"), mib("VmRSS"), mib("RssAnon"), mib("RssFile"))
		peak = max(peak, mib("VmHWM"))
	}
	return peak
}
