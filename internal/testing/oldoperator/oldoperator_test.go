package oldoperator

import (
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

var update = flag.Bool("update", false, "rewrite testdata/keepalived.conf")

// TestConf renders the configuration keepalived-operator's template gives a unicast group
// with a password and two Services, checks it against the fixture, and reads it with
// vrrpd's own keepalived.conf parser: VRRPv2 (keepalived's default), the status' router
// IDs, PASS authentication, priority 100, unicast peers.
func TestConf(t *testing.T) {
	g := &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "keepalived-operator", Name: "keepalivedgroup-workers"},
		Spec: v1alpha1.KeepalivedGroupSpec{Interface: "ens3", UnicastEnabled: true,
			VerbatimConfig: map[string]string{"vrrp_garp_master_delay": "2"}},
		Status: v1alpha1.KeepalivedGroupStatus{RouterIDs: map[string]int{"demo/web": 1, "demo/db": 2}},
	}
	svcs := []Service{
		{Key: "demo/web", VIPs: []netip.Addr{netip.MustParseAddr("192.168.131.100")}, Verbatim: map[string]string{"garp_master_refresh": "30"}},
		{Key: "demo/db", VIPs: []netip.Addr{netip.MustParseAddr("192.168.131.101"), netip.MustParseAddr("192.168.131.102")}},
	}
	peers := []netip.Addr{netip.MustParseAddr("192.168.131.11"), netip.MustParseAddr("192.168.131.12")}
	conf, err := Conf(g, svcs, "s3cret", peers)
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

	cfg, _, err := config.Load(path)
	if err != nil {
		t.Fatalf("vrrpd cannot read it: %v", err)
	}
	if len(cfg.Instances) != 2 {
		t.Fatalf("%d instances, want 2", len(cfg.Instances))
	}
	for _, in := range cfg.Instances {
		if in.Version != vrrp.Version2 || in.Priority != 100 || in.AuthType != vrrp.AuthSimple || in.AuthPass != "s3cret" ||
			int(in.VRID) != g.Status.RouterIDs[in.Name] || len(in.UnicastPeers) != 2 || in.AdvertInterval.Seconds() != 1 || !in.Preempt {
			t.Errorf("%s: %+v", in.Name, in)
		}
	}

	if _, err := Conf(g, append(svcs, Service{Key: "demo/new"}), "", nil); err == nil {
		t.Error("a Service without a router ID rendered")
	}
}
