package v1alpha1

import (
	"bytes"
	"os"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"
)

// TestOriginalManifestsDecodeStrictly: every field of the original
// operator's sample groups has a Go field with the same JSON name (strict
// decoding fails on any unknown field).
func TestOriginalManifestsDecodeStrictly(t *testing.T) {
	data, err := os.ReadFile(fixture.Operator("groups.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var probe struct{ Kind string }
		if err := yaml.Unmarshal(doc, &probe); err != nil || probe.Kind != "KeepalivedGroup" {
			continue
		}
		var g KeepalivedGroup
		if err := yaml.UnmarshalStrict(doc, &g); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		n++
		if g.Name == "keepalivedgroup-workers" {
			s := g.Spec
			if s.InterfaceFromIP != "192.168.131.1" || !s.UnicastEnabled || s.PasswordAuth == nil ||
				s.PasswordAuth.SecretRef.Name != "keepalived-password" || s.VerbatimConfig["vrrp_iptables"] != "my-keepalived" ||
				s.DaemonsetPodPriorityClassName != "system-node-critical" || len(s.DaemonsetPodAnnotations) != 1 {
				t.Errorf("workers spec decoded as %+v", s)
			}
		}
	}
	if n != 2 {
		t.Fatalf("decoded %d groups, want 2", n)
	}
}

// TestSchemeAndDeepCopy: the types register under redhatcop.redhat.io/v1alpha1
// and DeepCopy gives an equal, independent object.
func TestSchemeAndDeepCopy(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	gvks, _, err := s.ObjectKinds(&KeepalivedGroup{})
	if err != nil || len(gvks) != 1 || gvks[0].Group != "redhatcop.redhat.io" || gvks[0].Version != "v1alpha1" || gvks[0].Kind != "KeepalivedGroup" {
		t.Fatalf("kinds %v, %v", gvks, err)
	}
	g := &KeepalivedGroup{Spec: KeepalivedGroupSpec{Interface: "eth0", BlacklistRouterIDs: []int{1}, NodeSelector: map[string]string{"a": "b"}}}
	g.Status.RouterIDs = map[string]int{"ns/x": 3}
	g.Status.Instances = []Instance{{Key: "ns/x", VRID: 3, VIPs: []string{"10.99.0.1"}, Settings: InstanceSettings{Verbatim: map[string]string{"k": "v"}}}}
	c := g.DeepCopy()
	if !reflect.DeepEqual(g, c) {
		t.Fatal("copy differs")
	}
	c.Spec.BlacklistRouterIDs[0] = 9
	c.Status.RouterIDs["ns/x"] = 9
	c.Status.Instances[0].Settings.Verbatim["k"] = "changed"
	if g.Spec.BlacklistRouterIDs[0] != 1 || g.Status.RouterIDs["ns/x"] != 3 || g.Status.Instances[0].Settings.Verbatim["k"] != "v" {
		t.Fatal("copy shares memory with the original")
	}
}
