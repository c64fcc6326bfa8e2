package sharing

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/vrid"
)

// sharedStatus is the group status docs/design/router-sharing.md §7 decides,
// built from a plan with today's types: one instance per router (key, VRID,
// VIPs, settings, priorities), routerIDs with one entry per member (the
// original's field, each member valued with its router's VRID).
func sharedStatus(nodes []string, res Result) v1alpha1.KeepalivedGroupStatus {
	st := v1alpha1.KeepalivedGroupStatus{RouterIDs: map[string]int{}}
	for i, n := range nodes {
		st.Nodes = append(st.Nodes, v1alpha1.GroupNode{Name: n, Addresses: []string{netip.AddrFrom4([4]byte{192, 168, byte(i >> 8), byte(i)}).String()}})
	}
	keys := make([]string, len(res.Routers))
	for i, r := range res.Routers {
		keys[i] = r.Key
	}
	ids := vrid.Assign(keys, nil, nil).IDs
	for _, r := range res.Routers {
		in := v1alpha1.Instance{
			Key:        r.Key,
			VRID:       ids[r.Key],
			Settings:   v1alpha1.InstanceSettings{Version: 3, AdvertInterval: metav1.Duration{Duration: time.Second}, Preempt: true},
			Priorities: v1alpha1.EncodePriorities(r.Priorities),
		}
		for _, a := range r.VIPs {
			in.VIPs = append(in.VIPs, a.String())
		}
		st.Instances = append(st.Instances, in)
		for _, m := range r.Members {
			st.RouterIDs[m] = ids[r.Key]
		}
	}
	return st
}

// namedServices are n Services with names of realistic length (a 16-byte
// namespace, a 24-byte name).
func namedServices(n int) []Service {
	out := make([]Service, n)
	for i := range out {
		out[i] = Service{Key: fmt.Sprintf("team-%02d-production/checkout-service-%08d", i%20, i), Class: DefaultClass, VIPs: []netip.Addr{addr4(i)}}
	}
	return out
}

func longNodes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("worker-%03d.rack-%02d.dc1.example.com", i, i%40)
	}
	return out
}

// TestStatusSize: the shared status of the scales stays under the
// 512 KiB an object may have (with room for metadata and managedFields, which
// are small while routerIDs is atomic: see the design, §7).
func TestStatusSize(t *testing.T) {
	const limit = 512 << 10
	for _, tc := range []struct {
		name            string
		nodes, services int
		mustFit         bool
	}{
		{"500 Services (one of 20 groups), 500 nodes", 500, 500, true},
		{"500 Services, 500 nodes, budget 255", 500, 500, true},
		{"2,000 Services, 3 nodes", 3, 2000, true},
		{"2,000 Services, 100 nodes", 100, 2000, true},
		{"7,000 Services, 3 nodes", 3, 7000, false},
		{"10,000 Services in one group, 3 nodes", 3, 10000, false},
	} {
		budget := 0
		if tc.name == "500 Services, 500 nodes, budget 255" {
			budget = 255
		}
		nodes := longNodes(tc.nodes)
		res := Plan(nodes, namedServices(tc.services), budget)
		b, err := json.Marshal(sharedStatus(nodes, res))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d routers, status %d KiB (%d bytes a Service)", tc.name, len(res.Routers), len(b)>>10, len(b)/tc.services)
		if tc.mustFit && len(b) > limit*9/10 {
			t.Errorf("%s: status of %d KiB leaves less than a tenth of 512 KiB", tc.name, len(b)>>10)
		}
	}
}
