package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// kindLookups is a RESTMapper that counts the lookups of one kind.
type kindLookups struct {
	meta.RESTMapper
	kind schema.GroupKind
	n    atomic.Int64
}

func (m *kindLookups) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if gk == m.kind {
		m.n.Add(1)
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// withoutMastershipCRD uninstalls the KeepalivedMastership CRD until the test ends, and
// waits until the API server's discovery no longer lists it (the operator's RESTMapper
// reads discovery).
func withoutMastershipCRD(t *testing.T) {
	t.Helper()
	opts := envtest.CRDInstallOptions{Paths: []string{filepath.Join("..", "deploy", "crds", "redhatcop.redhat.io_keepalivedmasterships.yaml")}}
	if err := envtest.UninstallCRDs(testConfig, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Put it back for the other tests (and -count=N reruns); InstallCRDs waits until
		// it is served.
		if _, err := envtest.InstallCRDs(testConfig, opts); err != nil {
			t.Error(err)
		}
	})
	dc, err := discovery.NewDiscoveryClientForConfig(testConfig)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		crd := types.NamespacedName{Name: "keepalivedmasterships.redhatcop.redhat.io"}
		if err := k8s.Get(context.Background(), crd, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("CRD still there: %v", err)
		}
		list, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
		if err != nil {
			return err
		}
		for _, r := range list.APIResources {
			if r.Kind == mastershipGVK.Kind {
				return fmt.Errorf("discovery still lists %s", r.Name)
			}
		}
		return nil
	})
}

// TestMastershipOnlyWhenServed: on an API server without the KeepalivedMastership CRD (a
// Helm upgrade leaves new CRDs out) a group is Ready, not Degraded, with no retried
// reconcile and no Warning Event, and the operator asks the RESTMapper about the kind
// once per KindRecheck, not on every reconcile; once the CRD is installed, the group gets
// its KeepalivedMastership, owned by it, within a recheck.
func TestMastershipOnlyWhenServed(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "ms")
	withoutMastershipCRD(t)
	const recheck = 5 * time.Second
	lookups := &kindLookups{kind: mastershipGVK.GroupKind()}
	m := startManagerMapped(t, testConfig, Options{VrrpdImage: testImage, KindRecheck: recheck}, func(next meta.RESTMapper) meta.RESTMapper {
		lookups.RESTMapper = next
		return lookups
	}, ns)
	started := time.Now()
	newGroup(t, ns, "g", nil)
	key := types.NamespacedName{Namespace: ns, Name: "g"}
	touch := func(v string) { // a label change: a reconcile
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			g := getGroup(t, ns, "g")
			g.Labels = map[string]string{"touched": v}
			return k8s.Update(ctx, g)
		}); err != nil {
			t.Fatal(err)
		}
	}

	// Without the CRD: reconciles (each label change is one) until there are clearly
	// more of them than lookups the recheck allows in the time they took.
	allowed := func() int64 { return 1 + int64(time.Since(started)/recheck) }
	for i := 0; int64(m.groups.Reconciles(key)) <= allowed()+3; i++ {
		before := m.groups.Reconciles(key)
		touch(fmt.Sprint(i))
		eventually(t, 30*time.Second, func() error {
			if m.groups.Reconciles(key) == before {
				return fmt.Errorf("no reconcile after touch %d", i)
			}
			return nil
		})
	}
	reconciles, asked := m.groups.Reconciles(key), lookups.n.Load()
	t.Logf("without the CRD: %d reconciles in %v asked the RESTMapper about KeepalivedMastership %d times",
		reconciles, time.Since(started).Round(time.Millisecond), asked)
	if asked == 0 || asked > allowed() {
		t.Errorf("%d reconciles in %v asked the RESTMapper about KeepalivedMastership %d times, want 1 to %d (one per %v recheck)",
			reconciles, time.Since(started).Round(time.Millisecond), asked, allowed(), recheck)
	}
	waitReadyNotDegraded(t, ns, "g")
	// A retry after a write conflict (the label changes race the status writes) is the
	// work queue's business; an error about the missing kind would be spam.
	for _, e := range m.groups.Errors(key) {
		t.Logf("a reconcile retried: %s", e)
		if strings.Contains(e, "KeepalivedMastership") || strings.Contains(e, "no matches for kind") {
			t.Errorf("a reconcile without the CRD failed over it: %s", e)
		}
	}
	var events eventsv1.EventList
	if err := k8s.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning {
			t.Errorf("Warning Event %s on %s %s: %s", e.Reason, e.Regarding.Kind, e.Regarding.Name, e.Note)
		}
	}

	// The CRD installed: used within a recheck, at the next reconcile after it.
	if _, err := envtest.InstallCRDs(testConfig, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join("..", "deploy", "crds", "redhatcop.redhat.io_keepalivedmasterships.yaml")},
	}); err != nil {
		t.Fatal(err)
	}
	g := getGroup(t, ns, "g")
	i := 0
	eventually(t, recheck+60*time.Second, func() error {
		i++
		touch(fmt.Sprint("served-", i))
		var ms v1alpha1.KeepalivedMastership
		if err := k8s.Get(ctx, key, &ms); err != nil {
			return err
		}
		if refs := ms.OwnerReferences; len(refs) != 1 || refs[0].UID != g.UID {
			return fmt.Errorf("ownerReferences %v", refs)
		}
		return nil
	})
}
