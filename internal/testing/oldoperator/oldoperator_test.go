package oldoperator

import (
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

var update = flag.Bool("update", false, "rewrite testdata/keepalived.conf")

// TestConf renders the configuration keepalived-operator's template gives a unicast group
// with a password, two plain Services, a spreadvips one and an externalTrafficPolicy: Local
// one, checks it against the fixture, and reads it with vrrpd's own keepalived.conf parser
// as each pod's keepalived reads it (its --config-id is the pod's name): VRRPv2
// (keepalived's default), the status' router IDs, PASS authentication, unicast peers,
// priority 100 except on the owner of a spread address (state MASTER, priority 200), and
// the Local Service's instance tracking kube-proxy's health check with no weight (FAULT
// while it fails).
func TestConf(t *testing.T) {
	g := &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "keepalived-operator", Name: "keepalivedgroup-workers"},
		Spec: v1alpha1.KeepalivedGroupSpec{Interface: "ens3", UnicastEnabled: true,
			VerbatimConfig: map[string]string{"vrrp_garp_master_delay": "2"}},
		Status: v1alpha1.KeepalivedGroupStatus{RouterIDs: map[string]int{"demo/web": 1, "demo/db": 2,
			"demo/spread/192.168.131.103": 3, "demo/spread/192.168.131.104": 4, "demo/local": 5}},
	}
	svcs := []Service{
		{Key: "demo/web", VIPs: []netip.Addr{netip.MustParseAddr("192.168.131.100")}, Verbatim: map[string]string{"garp_master_refresh": "30"}},
		{Key: "demo/db", VIPs: []netip.Addr{netip.MustParseAddr("192.168.131.101"), netip.MustParseAddr("192.168.131.102")}},
		{Key: "demo/spread", Spread: true, VIPs: []netip.Addr{netip.MustParseAddr("192.168.131.103"), netip.MustParseAddr("192.168.131.104")}},
		{Key: "demo/local", HealthCheckNodePort: 31234, VIPs: []netip.Addr{netip.MustParseAddr("192.168.131.105")}},
	}
	// Given out of order: the template sorts the pods by name.
	pods := []PodRef{
		{Name: "keepalivedgroup-workers-b2", HostIP: netip.MustParseAddr("192.168.131.12")},
		{Name: "keepalivedgroup-workers-a1", HostIP: netip.MustParseAddr("192.168.131.11")},
	}
	conf, err := Conf(g, svcs, "s3cret", pods)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "keepalived.conf")
	if *update {
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if conf != string(want) {
		t.Errorf("rendered:\n%s\nwant (%s):\n%s", conf, path, want)
	}

	// The first spread address is owned by the first pod by name, the second by the next.
	owner := map[string]string{
		"demo/spread/192.168.131.103": "keepalivedgroup-workers-a1",
		"demo/spread/192.168.131.104": "keepalivedgroup-workers-b2",
	}
	for _, pod := range pods {
		cfg, _, err := config.LoadWith(path, config.LoadOptions{ConfigID: pod.Name})
		if err != nil {
			t.Fatalf("vrrpd cannot read it as %s: %v", pod.Name, err)
		}
		if len(cfg.Instances) != 5 {
			t.Fatalf("%s: %d instances, want 5", pod.Name, len(cfg.Instances))
		}
		for _, in := range cfg.Instances {
			prio, state := 100, config.StateBackup
			if owner[in.Name] == pod.Name {
				prio, state = 200, config.StateMaster
			}
			if in.Version != vrrp.Version2 || int(in.Priority) != prio || in.InitialState != state || in.AuthType != vrrp.AuthSimple || in.AuthPass != "s3cret" ||
				int(in.VRID) != g.Status.RouterIDs[in.Name] || len(in.UnicastPeers) != 2 || in.AdvertInterval.Seconds() != 1 || !in.Preempt {
				t.Errorf("%s: %s: %+v, want priority %d, state %s", pod.Name, in.Name, in, prio, state)
			}
			tracked := len(in.TrackScripts) == 1 && in.TrackScripts[0].Script == "demo/local" && in.TrackScripts[0].Weight == 0
			if (in.Name == "demo/local") != tracked {
				t.Errorf("%s: %s tracks %+v", pod.Name, in.Name, in.TrackScripts)
			}
		}
		if len(cfg.Scripts) != 1 {
			t.Fatalf("%s: scripts %+v, want the Local Service's", pod.Name, cfg.Scripts)
		}
		sc := cfg.Scripts[0]
		if sc.Name != "demo/local" || !slices.Equal(sc.Command, []string{"/usr/bin/curl", "--fail", "--max-time", "1", "http://127.0.0.1:31234/health"}) ||
			sc.Rise != 3 || sc.Fall != 3 || sc.Timeout != 10*time.Second || sc.Interval != time.Second || sc.Weight != 0 {
			t.Errorf("%s: script %+v", pod.Name, sc)
		}
	}

	if _, err := Conf(g, append(slices.Clone(svcs[:2]), Service{Key: "demo/new"}), "", nil); err == nil {
		t.Error("a Service without a router ID rendered")
	}
}
