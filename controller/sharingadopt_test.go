package controller

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/groupsource"
)

// TestSharedConversionOfAFullSegment (envtest, docs/design/router-sharing.md §5's
// adoption): a segment filled to 255 router IDs by a filler group's 55 per-Service
// instances and group g's 200, with 5 more Services of g left out, and g switched to
// Shared. g converts to its 6 routers, serving all 205 Services; every status of g
// written on the way is valid (checkStep: no address in no instance, no ID on two
// keys, no ID passed to another key except by an adoption, where a new router takes
// over a per-Service instance with its addresses and its top node); exactly one
// router adopts (the first: later ones take IDs freed a write earlier); the filler
// group's instances keep their IDs throughout (watched too).
func TestSharedConversionOfAFullSegment(t *testing.T) {
	ns := newNamespace(t, "shfull")
	lbl := map[string]string{"shfull-test": ns}
	newNodes(t, ns, 3, lbl)
	for _, name := range []string{"f", "g"} {
		newGroup(t, ns, name, func(g *v1alpha1.KeepalivedGroup) {
			g.Spec.NodeSelector = lbl
			g.Spec.AdvertInterval = &metav1.Duration{Duration: 100 * time.Millisecond}
			// Both start per Service: f stays so, g is switched below.
			g.Spec.RouterSharing = v1alpha1.RouterSharingPerService
		})
	}
	startManager(t, ns)
	fvips := createServicesAs(t, ns, ns+"/f", "f", 3, 55)
	eventually(t, 2*time.Minute, func() error {
		if c := len(getGroup(t, ns, "f").Status.Instances); c != 55 {
			return fmt.Errorf("filler: %d per-Service instances, want 55", c)
		}
		return nil
	})
	vips := createServicesAs(t, ns, ns+"/g", "s", 2, 205)
	eventually(t, 2*time.Minute, func() error {
		if c := len(getGroup(t, ns, "g").Status.Instances); c != 200 {
			return fmt.Errorf("%d per-Service instances, want 200 (the segment full)", c)
		}
		return nil
	})
	filler := map[string]int{}
	for _, in := range getGroup(t, ns, "f").Status.Instances {
		filler[in.Key] = in.VRID
	}
	log := watchStatuses(t, ns, "g", vips)
	flog := watchStatuses(t, ns, "f", fvips)

	start := switchToShared(t, ns, "g", log)
	eventually(t, 2*time.Minute, func() error {
		_, err := sharedView(getGroup(t, ns, "g"), vips, 3, 6)
		return err
	})
	t.Logf("converted a full segment's 200 per-Service instances (and 5 Services without) to 6 shared routers in %v; statuses:%s",
		time.Since(start).Round(time.Millisecond), log.summary(start))

	written, errs := log.snapshot()
	for _, e := range errs {
		t.Error(e)
	}
	var adopted [][2]string
	for i := 1; i < len(written); i++ {
		adopted = append(adopted, adoptions(&written[i-1], &written[i])...)
	}
	if len(adopted) != 1 {
		t.Errorf("adoptions %v, want exactly one (the first router)", adopted)
	}
	_, ferrs := flog.snapshot()
	for _, e := range ferrs {
		t.Error("filler:", e)
	}
	for _, in := range getGroup(t, ns, "f").Status.Instances {
		if id, ok := filler[in.Key]; !ok || id != in.VRID {
			t.Errorf("filler instance %s has ID %d, had %d (%v)", in.Key, in.VRID, id, ok)
		}
	}
	if c := len(getGroup(t, ns, "f").Status.Instances); c != 55 {
		t.Errorf("filler has %d instances, want its 55", c)
	}
}

// TestAdoptionStatusContract: vrrpd's translation (groupsource.Translate) of the write
// before an adoption and of the adoption write gives, on every node, the adopted
// per-Service instance and its router the same interface, family, VRID, socket and
// priority under the two names, which is what vrrpd's reload renames in place
// (Daemon.renameMoved): the router runs on as the instance did, and no other
// virtual router of the node has that VRID.
func TestAdoptionStatusContract(t *testing.T) {
	nodes := []corev1.Node{node("n1", "10.99.0.1"), node("n2", "10.99.0.2"), node("n3", "10.99.0.3")}
	var services []corev1.Service
	for i := range 260 {
		services = append(services, sharedTestService("ns", fmt.Sprintf("s%03d", i), fmt.Sprintf("fd00:99::2:%x", i), false))
	}
	g := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"}, Spec: v1alpha1.KeepalivedGroupSpec{Interface: "eth0", RouterSharing: v1alpha1.RouterSharingPerService}}
	stepGroup(g, services, nodes, nil, 0)
	g.Spec.RouterSharing = v1alpha1.RouterSharingShared
	before := g.DeepCopy()
	stepGroup(g, services, nodes, nil, time.Hour)
	ad := adoptions(&before.Status, &g.Status)
	if len(ad) != 1 {
		t.Fatalf("adoptions %v, want one", ad)
	}
	from, to := ad[0][0], ad[0][1]
	for _, n := range g.Status.Nodes {
		old, _, err := groupsource.Translate(before, n.Name, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		nu, _, err := groupsource.Translate(g, n.Name, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		a, okA := old.Instance(from)
		b, okB := nu.Instance(to)
		if !okA || !okB {
			t.Fatalf("%s: %s in the old configuration %v, %s in the new %v", n.Name, from, okA, to, okB)
		}
		if _, still := nu.Instance(from); still {
			t.Fatalf("%s: %s still runs in the adoption write", n.Name, from)
		}
		if a.Interface != b.Interface || a.Family != b.Family || a.VRID != b.VRID || !a.VMAC.Equal(b.VMAC) ||
			a.Unicast() != b.Unicast() || a.MulticastGroup != b.MulticastGroup || a.Priority != b.Priority {
			t.Errorf("%s: %s (%s %v VRID %d prio %d) and %s (%s %v VRID %d prio %d) are not one virtual router",
				n.Name, from, a.Interface, a.Family, a.VRID, a.Priority, to, b.Interface, b.Family, b.VRID, b.Priority)
		}
		for _, ci := range nu.Instances {
			if ci.Name != to && ci.VRID == b.VRID && ci.Family == b.Family {
				t.Errorf("%s: %s has the adopted VRID %d too", n.Name, ci.Name, b.VRID)
			}
		}
	}
}
