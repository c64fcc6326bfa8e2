package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// TestCRDValidation proves each OpenAPI and CEL rule of the CRD against the
// real API server: bad objects are rejected with the rule's message, good
// ones (including the limits) are accepted.
func TestCRDValidation(t *testing.T) {
	ns := newNamespace(t, "crdval")
	cases := []struct {
		name    string
		spec    string
		wantErr string // substring of the API server's message; "" = accepted
	}{
		{"minimal interface", `interface: eth0`, ""},
		{"minimal interfaceFromIP", `interfaceFromIP: 10.99.0.1`, ""},
		{"interfaceFromIP v6", `interfaceFromIP: "fd00:99::1"`, ""},
		{"neither interface", `unicastEnabled: true`, "one of interface or interfaceFromIP is required"},
		{"interfaceFromIP not an IP", `{interfaceFromIP: "10.99.0.300"}`, "interfaceFromIP must be an IP address"},
		{"blacklist 0", `{interface: eth0, blacklistRouterIDs: [0]}`, "should be greater than or equal to 1"},
		{"blacklist 256", `{interface: eth0, blacklistRouterIDs: [256]}`, "should be less than or equal to 255"},
		{"blacklist dup", `{interface: eth0, blacklistRouterIDs: [3, 3]}`, "Duplicate value"},
		{"blacklist ok", `{interface: eth0, blacklistRouterIDs: [1, 255]}`, ""},
		{"version 4", `{interface: eth0, vrrpVersion: 4}`, "Unsupported value"},
		{"routerSharing Shared", `{interface: eth0, routerSharing: Shared, routerBudget: 100}`, ""},
		{"routerSharing PerService", `{interface: eth0, routerSharing: PerService}`, ""},
		{"routerSharing other", `{interface: eth0, routerSharing: Sometimes}`, "Unsupported value"},
		{"routerBudget 0", `{interface: eth0, routerBudget: 0}`, "should be greater than or equal to 1"},
		{"routerBudget 256", `{interface: eth0, routerBudget: 256}`, "should be less than or equal to 255"},
		{"v3 10ms", `{interface: eth0, advertInterval: 10ms}`, ""},
		{"v3 40.95s", `{interface: eth0, advertInterval: 40.95s}`, ""},
		{"v3 1.5s", `{interface: eth0, advertInterval: 1.5s}`, ""},
		{"v3 5ms", `{interface: eth0, advertInterval: 5ms}`, "whole centiseconds from 10ms to 40.95s"},
		{"v3 15ms", `{interface: eth0, advertInterval: 15ms}`, "whole centiseconds from 10ms to 40.95s"},
		{"v3 41s", `{interface: eth0, advertInterval: 41s}`, "whole centiseconds from 10ms to 40.95s"},
		{"v2 1s", `{interface: eth0, vrrpVersion: 2, advertInterval: 1s}`, ""},
		{"v2 255s", `{interface: eth0, vrrpVersion: 2, advertInterval: 255s}`, ""},
		{"v2 4m15s", `{interface: eth0, vrrpVersion: 2, advertInterval: 4m15s}`, ""},
		{"v2 256s", `{interface: eth0, vrrpVersion: 2, advertInterval: 256s}`, "whole seconds from 1s to 255s"},
		{"v2 500ms", `{interface: eth0, vrrpVersion: 2, advertInterval: 500ms}`, "whole seconds from 1s to 255s"},
		{"v2 1.5s", `{interface: eth0, vrrpVersion: 2, advertInterval: 1.5s}`, "whole seconds from 1s to 255s"},
		{"interval sub-ms", `{interface: eth0, advertInterval: 10.5ms}`, "should match"},
		{"interval garbage", `{interface: eth0, advertInterval: soon}`, "should match"},
		{"pool ok", `{interface: eth0, addressPool: {addresses: ["10.99.0.200/29", "10.99.0.220-10.99.0.222", "fd00:99::200/125", "10.99.0.230"], excludedAddresses: ["10.99.0.200"]}}`, ""},
		{"pool bad cidr", `{interface: eth0, addressPool: {addresses: ["10.99.0.0/33"]}}`, "must be a CIDR, a single IP address, or a range"},
		{"pool mixed range", `{interface: eth0, addressPool: {addresses: ["10.99.0.1-fd00:99::1"]}}`, "must be a CIDR, a single IP address, or a range"},
		{"pool garbage", `{interface: eth0, addressPool: {addresses: ["lots"]}}`, "must be a CIDR, a single IP address, or a range"},
		{"pool bad exclusion", `{interface: eth0, addressPool: {addresses: ["10.99.0.0/24"], excludedAddresses: ["10.99.0.1-"]}}`, "must be a CIDR, a single IP address, or a range"},
		{"pool empty", `{interface: eth0, addressPool: {addresses: []}}`, "should have at least 1 items"},
		{"passwordAuth without secretRef", `{interface: eth0, passwordAuth: {secretKey: pw}}`, "secretRef: Required value"},
		{"passwordAuth empty secret name", `{interface: eth0, passwordAuth: {secretRef: {name: ""}}}`, "passwordAuth.secretRef.name is required"},
		{"interface too long", `{interface: abcdefghijklmnopq}`, "may not be more than 15"},
		{"passwordAuth v3", `{interface: eth0, vrrpVersion: 3, passwordAuth: {secretRef: {name: pw}}}`, "passwordAuth needs VRRPv2"},
		{"passwordAuth v2", `{interface: eth0, vrrpVersion: 2, passwordAuth: {secretRef: {name: pw}}}`, ""},
		{"passwordAuth no version", `{interface: eth0, passwordAuth: {secretRef: {name: pw}}}`, ""},
		{"passwordAuth no version 2s", `{interface: eth0, advertInterval: 2s, passwordAuth: {secretRef: {name: pw}}}`, ""},
		{"passwordAuth no version 500ms", `{interface: eth0, advertInterval: 500ms, passwordAuth: {secretRef: {name: pw}}}`, "whole seconds from 1s to 255s"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Unstructured, so the API server sees exactly the YAML
			// (Go types would fill in or refuse some of these values).
			var spec map[string]any
			if err := yaml.Unmarshal([]byte(tc.spec), &spec); err != nil {
				t.Fatalf("test spec: %v", err)
			}
			g := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": v1alpha1.GroupVersion.String(),
				"kind":       "KeepalivedGroup",
				"metadata":   map[string]any{"namespace": ns, "name": fmt.Sprintf("g%d", i)},
				"spec":       spec,
			}}
			err := k8s.Create(context.Background(), g)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("accepted; want an error containing %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

// TestCRDDefaults proves the defaults the API server fills in.
func TestCRDDefaults(t *testing.T) {
	ns := newNamespace(t, "crddef")
	g := &v1alpha1.KeepalivedGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g"},
		Spec: v1alpha1.KeepalivedGroupSpec{
			Interface:    "eth0",
			PasswordAuth: &v1alpha1.PasswordAuth{},
			AddressPool:  &v1alpha1.AddressPool{Addresses: []v1alpha1.AddressRange{"10.99.0.200/29"}},
		},
	}
	g.Spec.PasswordAuth.SecretRef.Name = "pw"
	if err := k8s.Create(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	s := g.Spec
	// No default version: unset means 2 with passwordAuth (as here) and 3
	// without, which the operator decides (groupSettings).
	if s.VRRPVersion != 0 {
		t.Errorf("vrrpVersion = %d, want it left unset", s.VRRPVersion)
	}
	if s.AdvertInterval == nil || s.AdvertInterval.Duration != time.Second {
		t.Errorf("advertInterval = %v, want 1s", s.AdvertInterval)
	}
	if s.Preempt == nil || !*s.Preempt {
		t.Errorf("preempt = %v, want true", s.Preempt)
	}
	if s.AddressPool.AutoAssign == nil || !*s.AddressPool.AutoAssign {
		t.Errorf("addressPool.autoAssign = %v, want true", s.AddressPool.AutoAssign)
	}
	if s.PasswordAuth.SecretKey != "password" {
		t.Errorf("passwordAuth.secretKey = %q, want password", s.PasswordAuth.SecretKey)
	}
	// Shared routers are the default, and say so in the object (router-sharing.md §3).
	if s.RouterSharing != v1alpha1.RouterSharingShared {
		t.Errorf("routerSharing = %q, want Shared", s.RouterSharing)
	}
	if s.RouterBudget != nil {
		t.Errorf("routerBudget = %d, want it left unset (the operator's default)", *s.RouterBudget)
	}
}

// TestSharingAppliesUnset: a group whose stored object has no routerSharing (a CRD
// without the default, from an older release) shares routers as the default says;
// only an explicit PerService, or a takeover under way, keeps one router per Service.
func TestSharingAppliesUnset(t *testing.T) {
	for _, tc := range []struct {
		sharing   v1alpha1.RouterSharing
		migration bool
		want      bool
	}{
		{"", false, true},
		{v1alpha1.RouterSharingShared, false, true},
		{v1alpha1.RouterSharingPerService, false, false},
		{"", true, false},
		{v1alpha1.RouterSharingShared, true, false},
	} {
		g := &v1alpha1.KeepalivedGroup{Spec: v1alpha1.KeepalivedGroupSpec{RouterSharing: tc.sharing}}
		if tc.migration {
			g.Status.Migration = &v1alpha1.Migration{Phase: v1alpha1.MigrationShadowing}
		}
		if got := sharingApplies(g); got != tc.want {
			t.Errorf("routerSharing %q, takeover %v: sharingApplies %v, want %v", tc.sharing, tc.migration, got, tc.want)
		}
	}
}
