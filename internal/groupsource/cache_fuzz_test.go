package groupsource

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/config"
	"github.com/vrrp-operator/vrrp-operator/internal/regularfile"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// FuzzGroupCache: the group cache (keepalivedgroup.json in the state directory) is read
// at every start in Kubernetes mode, before the API server answers, and what it holds
// goes to Translate without the API server's validation. decodeCache never panics; what
// it accepts round-trips (encodeCache of it decodes to a group that encodes to the same
// bytes and translates to the same configuration); and its translation never panics and
// gives only instances the state machine accepts.
func FuzzGroupCache(f *testing.F) {
	// Caches as encodeCache writes them, from the groups of the Translate tests.
	v2 := testGroup()
	for i := range v2.Status.Instances {
		s := &v2.Status.Instances[i].Settings
		s.Version, s.Unicast = 2, true
		s.PasswordAuth = &v1alpha1.PasswordAuth{SecretRef: corev1.LocalObjectReference{Name: "p"}}
		s.Verbatim = map[string]string{"garp_master_delay": "5"}
	}
	for _, g := range []*v1alpha1.KeepalivedGroup{testGroup(), v2} {
		b, err := encodeCache(&cacheEntry{Group: g})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, byte(0), []byte("s3cret\n"))
		f.Add(b, byte(1), []byte(""))
		f.Add(b[:len(b)/2], byte(0), []byte("x")) // torn
	}
	// TestCacheRejects' files.
	for _, s := range []string{`{"group":{},"extra":1}`, `{"group":{},"password":"czNjcmV0"}`, `{}`, `{"group":null}`, "global_defs {"} {
		f.Add([]byte(s), byte(0), []byte(nil))
	}
	f.Fuzz(func(t *testing.T, data []byte, pick byte, password []byte) {
		e, err := decodeCache(bytes.NewReader(data))
		if err != nil {
			if e != nil {
				t.Fatalf("error %v with an entry", err)
			}
			return
		}
		first, err := encodeCache(e)
		if err != nil {
			t.Fatalf("encodeCache of what was read: %v", err)
		}
		again, err := decodeCache(bytes.NewReader(first))
		if err != nil {
			t.Fatalf("reading back %s: %v", first, err)
		}
		if second, _ := encodeCache(again); !bytes.Equal(first, second) {
			t.Fatalf("a second write differs:\n%s\n%s", first, second)
		}
		node := "a"
		if ns := e.Group.Status.Nodes; len(ns) > 0 {
			node = ns[int(pick)%len(ns)].Name
		}
		a, _, errA := Translate(e.Group, node, password, nil)
		b, _, errB := Translate(again.Group, node, password, nil)
		if (errA == nil) != (errB == nil) || (errA == nil && !configEqual(a, b)) {
			t.Fatalf("the cached group translates differently: %v / %v", errA, errB)
		}
		if errA != nil {
			return
		}
		for _, c := range a.Instances {
			primary := netip.MustParseAddr("10.99.0.1")
			if c.Family == config.IPv6 {
				primary = netip.MustParseAddr("fe80::1")
			}
			if err := c.StateMachineConfig(primary).Validate(); err != nil {
				t.Fatalf("%s: translated config rejected by the state machine: %v\n%+v", c.Name, err, c)
			}
		}
	})
}

// FuzzPasswordFile: the password file is the kubelet's copy of a Secret's key, which
// whoever can edit the Secret writes. readPasswordFile reads at most maxPasswordFile
// bytes of it and refuses more; the password the instances then carry is the file's
// content without surrounding white space (keepalived's Secrets may end in a newline),
// cut to VRRPv2's 8 bytes; an empty one fails the translation, never runs an instance
// without its password.
func FuzzPasswordFile(f *testing.F) {
	for _, s := range []string{"s3cret", "s3cret\n", "  padded  \r\n", "0123456789abcdef", "", "\n", "\x00\xff\xfe", "pässwörd",
		strings.Repeat("x", maxPasswordFile), strings.Repeat("x", maxPasswordFile+1)} {
		f.Add([]byte(s))
	}
	g := testGroup()
	g.Status.Instances = g.Status.Instances[1:] // the IPv4 ones: VRRPv2 carries the password
	for i := range g.Status.Instances {
		s := &g.Status.Instances[i].Settings
		s.Version = 2
		s.PasswordAuth = &v1alpha1.PasswordAuth{SecretRef: corev1.LocalObjectReference{Name: "p"}}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "password")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		pw, err := readPasswordFile(path)
		if len(data) > maxPasswordFile {
			if !errors.Is(err, regularfile.ErrTooLarge) || pw != nil {
				t.Fatalf("%d bytes: %v, %d bytes read; want ErrTooLarge", len(data), err, len(pw))
			}
			return
		}
		if err != nil || !bytes.Equal(pw, data) {
			t.Fatalf("read %q, %v; want %q", pw, err, data)
		}
		cfg, _, err := Translate(g, "a", pw, nil)
		want := bytes.TrimSpace(data)
		if len(want) == 0 {
			if err == nil || !strings.Contains(err.Error(), "no password in Secret") {
				t.Fatalf("empty password %q: %v; want the group refused", data, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("password %q: %v", data, err)
		}
		want = want[:min(len(want), 8)]
		for _, in := range cfg.Instances {
			if in.AuthType != vrrp.AuthSimple || in.AuthPass != string(want) {
				t.Fatalf("password %q: %s carries %v %q, want PASS %q", data, in.Name, in.AuthType, in.AuthPass, want)
			}
		}
	})
}
