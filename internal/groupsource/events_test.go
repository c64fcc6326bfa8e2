package groupsource

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/poll"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

func TestServiceOf(t *testing.T) {
	for in, want := range map[string]string{
		"ns/web":              "ns/web",
		"ns/web/10.99.0.100":  "ns/web",
		"ns/web/ipv6":         "ns/web",
		"ns/web/fd00:99::100": "ns/web",
		"VI_1":                "",
		"/web":                "",
		"ns/":                 "",
		"@default/n-a,n-b":    "",
		"@default/#17/ipv4":   "",
	} {
		got, ok := ServiceOf(in)
		if (want == "") == ok || (ok && got.String() != want) {
			t.Errorf("ServiceOf(%q) = %v, %v; want %q", in, got, ok, want)
		}
	}
}

// TestEventRecorderWithOperatorRBAC: with only the rights the operator gives the group's
// vrrpd ServiceAccount, a change into MASTER of a Service's instance becomes a
// nodeAssigned Event on the Service (with its UID, as kubectl describe looks it up), and
// the change out of MASTER a nodeUnassigned one; changes between other states make none. A
// second holder of its VIP is a Warning VIPConflict naming the other MAC, and its end a
// Normal VIPConflictResolved, with the same rights.
func TestEventRecorderWithOperatorRBAC(t *testing.T) {
	needAPI(t)
	ctx := context.Background()
	ns := newNamespace(t, "events")
	startOperator(t, ns)
	node := fmt.Sprintf("gs-%d-%s-n0", os.Getpid(), ns)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"lb": ns}}}
	if err := k8s.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), n) })
	g := &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec:       v1alpha1.KeepalivedGroupSpec{Interface: "eth0", NodeSelector: map[string]string{"lb": ns}},
	}
	if err := k8s.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Annotations: map[string]string{v1alpha1.AnnotationGroup: ns + "/edge"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}, ExternalIPs: []string{"10.99.0.100"}},
	}
	other := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-ours"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	for _, s := range []*corev1.Service{svc, other} {
		if err := k8s.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// vrrpd's credentials: the group's ServiceAccount, once the operator has bound it.
	asSA := rest.CopyConfig(testConfig)
	asSA.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":edge-vrrpd"}
	saClient, err := client.New(asSA, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, func() error {
		return saClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, &corev1.Service{})
	})
	if err := saClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "not-ours"}, &corev1.Service{}); !apierrors.IsForbidden(err) {
		t.Errorf("vrrpd's ServiceAccount reads a Service not of its group: %v", err)
	}

	rec, err := NewEventRecorder(asSA, node, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { rec.Run(rctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	vips := []netip.Prefix{netip.MustParsePrefix("10.99.0.100/32")}
	key := ns + "/web"
	rec.Observe(key, vrrp.StateInit, vrrp.StateBackup, 7, vips) // no Event
	rec.Observe(key, vrrp.StateBackup, vrrp.StateMaster, 7, vips)
	rec.Observe(key, vrrp.StateMaster, vrrp.StateBackup, 7, vips)
	rec.Observe("VI_1", vrrp.StateBackup, vrrp.StateMaster, 7, vips) // not a Service's: no Event
	// A second holder of its VIP, and its end.
	const otherMAC = "52:54:00:00:00:99"
	rec.ObserveConflict(key, 7, vips[0].Addr(), otherMAC, true)
	rec.ObserveConflict(key, 7, vips[0].Addr(), otherMAC, false)

	var events eventsv1.EventList
	poll.Until(t, 10*time.Second, func() error {
		if err := k8s.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return err
		}
		var got []string
		for _, e := range events.Items {
			if e.ReportingController != reportingController {
				continue // the operator's
			}
			got = append(got, e.Reason)
			if conflict := strings.HasPrefix(e.Reason, ReasonVIPConflict); conflict {
				want := corev1.EventTypeNormal
				if e.Reason == ReasonVIPConflict {
					want = corev1.EventTypeWarning
				}
				if e.Type != want || !strings.Contains(e.Note, otherMAC) {
					t.Errorf("Event %s: type %s, note %q; want %s naming the other MAC", e.Reason, e.Type, e.Note, want)
				}
			}
			if e.Regarding.Kind != "Service" || e.Regarding.Name != "web" || e.Regarding.UID != svc.UID {
				t.Fatalf("Event %s regards %+v, want Service web UID %s", e.Name, e.Regarding, svc.UID)
			}
			if !strings.Contains(e.Note, node) || !strings.Contains(e.Note, "10.99.0.100") || !strings.Contains(e.Note, "VRID 7") {
				t.Errorf("Event note %q lacks the node, VIP or VRID", e.Note)
			}
		}
		if len(got) < 4 {
			return fmt.Errorf("vrrpd's Events so far: %v", got)
		}
		slices.Sort(got)
		if fmt.Sprint(got) != "[VIPConflict VIPConflictResolved nodeAssigned nodeUnassigned]" {
			t.Fatalf("vrrpd's Events: %v, want one nodeAssigned, one nodeUnassigned, one VIPConflict and one VIPConflictResolved", got)
		}
		return nil
	})
}
