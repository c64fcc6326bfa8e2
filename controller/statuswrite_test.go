package controller

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// TestNewServicesWriteStatusWithoutConflict: Services created one after another, each
// once the previous one is in the status, as a user creates them. Each new Service
// rewrites the group's events Role (it names the Service), whose event reconciles the
// group again at once, usually before the cache holds the status just written; catchUp
// makes that reconcile start from the status written, so it writes nothing and no write
// is refused as a conflict and retried after the queue's backoff (about one Service in
// three without it).
func TestNewServicesWriteStatusWithoutConflict(t *testing.T) {
	ns := newNamespace(t, "statuswrite")
	newGroup(t, ns, "g", nil)
	m := startManager(t, ns)
	ref := types.NamespacedName{Namespace: ns, Name: "g"}
	eventually(t, 20*time.Second, func() error {
		if getGroup(t, ns, "g").Status.ObservedGeneration == 0 {
			return fmt.Errorf("no status yet")
		}
		return nil
	})
	settle(t, m, 300*time.Millisecond, ref)
	before := m.r.Groups.Retries(ref)
	const n = 12
	for i := range n {
		name := fmt.Sprintf("s%d", i)
		newService(t, ns, name, ns+"/g", withExternalIPs(fmt.Sprintf("10.99.0.%d", 30+i)))
		eventually(t, 20*time.Second, func() error {
			if !slices.ContainsFunc(getGroup(t, ns, "g").Status.Instances, func(in v1alpha1.Instance) bool { return in.Key == ns+"/"+name }) {
				return fmt.Errorf("%s not in the status", name)
			}
			return nil
		})
	}
	settle(t, m, 300*time.Millisecond, ref)
	// One retry is allowed for a cache lagging two writes behind on a loaded machine.
	if r := m.r.Groups.Retries(ref) - before; r > 1 {
		t.Errorf("%d of %d new Services' reconciles were retried after an error (a status write conflict), want at most 1", r, n)
	}
}
