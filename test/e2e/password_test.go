package e2e

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// TestKubernetesModePasswordFile runs a VRRPv2 group with passwordAuth as the DaemonSet
// runs it: vrrpd's Role reads no Secret, the password comes from the file its
// --password-file names (the kubelet's Secret volume). Two nodes whose files differ do not
// accept each other's advertisements, so both hold the VIP; once the second node's file is
// replaced (as the kubelet does when the Secret changes) with the same password, save a
// trailing newline, they agree on one master, without a restart.
func TestKubernetesModePasswordFile(t *testing.T) {
	ctx := context.Background()
	lab, ns := groupLab(t, v1alpha1.KeepalivedGroupSpec{VRRPVersion: 2, AdvertInterval: &metav1.Duration{Duration: time.Second},
		PasswordAuth: &v1alpha1.PasswordAuth{SecretRef: corev1.LocalObjectReference{Name: "vrrp-pw"}}})
	h1, h2 := lab.Host("h1"), lab.Host("h2")
	vip := netip.MustParseAddr("10.99.0.100")
	newService(t, ns, "web", map[string]string{v1alpha1.AnnotationGroup: ns + "/" + groupName}, vip)
	vrrpdtest.WaitFor(t, 20*time.Second, "the group's instance with passwordAuth", func() bool {
		var got v1alpha1.KeepalivedGroup
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: groupName}, &got)
		return err == nil && len(got.Status.Nodes) == 2 && len(got.Status.Instances) == 1 &&
			got.Status.Instances[0].Settings.PasswordAuth != nil
	})

	args := daemonSetArgs(t, ns)
	const mounted = "/etc/vrrpd/password/password"
	if !strings.Contains(strings.Join(args, " "), "--password-file "+mounted) {
		t.Fatalf("DaemonSet args %q lack --password-file %s", args, mounted)
	}
	environ := []string{"KUBECONFIG=" + vrrpdKubeconfig(t, ns)}
	files := map[string]string{}
	for name, pw := range map[string]string{"h1": "s3cret\n", "h2": "other"} {
		files[name] = filepath.Join(t.TempDir(), "password")
		writePassword(t, files[name], pw)
	}
	for _, node := range []string{"h1", "h2"} {
		startNodeVrrpd(t, lab.Host(node), args, environ, mounted, files[node])
	}
	holders := func(n int) func() bool {
		return func() bool { return len(vrrpdtest.Holders(t, vip, h1, h2)) == n }
	}
	vrrpdtest.WaitFor(t, 15*time.Second, "both nodes master: their passwords differ", holders(2))
	time.Sleep(3 * time.Second) // several advertisements: it stays so
	if !holders(2)() {
		t.Fatalf("VIP on %v, want both nodes while the passwords differ", vrrpdtest.Holders(t, vip, h1, h2))
	}

	writePassword(t, files["h2"], "s3cret")
	vrrpdtest.WaitFor(t, 25*time.Second, "one master once h2's password file matches h1's", holders(1))
	time.Sleep(3 * time.Second)
	if !holders(1)() {
		t.Fatalf("VIP on %v, want one node", vrrpdtest.Holders(t, vip, h1, h2))
	}
}

// writePassword replaces the file at path as the kubelet replaces a Secret volume's
// content: a new file renamed over the old one.
func writePassword(t *testing.T, path, pw string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(pw), 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
