package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/poll"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/testenv"
	"github.com/vrrp-operator/vrrp-operator/internal/version"
)

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--log-format", "xml"}, {"--no-such-flag"},
		{"--vrrpd-memory-limit", "lots"}, {"--vrrpd-cpu-request", "0"}, {"--vrrpd-memory-request", ""},
		{"--vrrpd-memory-request", "64Mi", "--vrrpd-memory-limit", "32Mi"},
		{"--podmonitor-labels", "release"}, {"--podmonitor-labels", "release=a b"}, {"--podmonitor-labels", "metrics=x"},
	} {
		if err := run(context.Background(), args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	// Refused before the operator looks for a cluster, naming the flag.
	t.Setenv("KUBECONFIG", "/nonexistent")
	for _, args := range [][]string{
		{"--vrrpd-image-pull-policy", "always"}, {"--vrrpd-image-pull-policy", "Sometimes"},
		{"--vrrpd-image-pull-secrets", "regcred,Bad_Name"}, {"--vrrpd-image-pull-secrets", "a/b"},
	} {
		err := run(context.Background(), args)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: %v, want an error naming %s", args, err, args[0])
		}
	}
}

// TestDefaultVrrpdImage: without --vrrpd-image the operator runs vrrpd of its own
// version (the -X internal/version.Version the Makefile stamps), as an image tag.
func TestDefaultVrrpdImage(t *testing.T) {
	old := version.Version
	t.Cleanup(func() { version.Version = old })
	for v, want := range map[string]string{
		"v1.4.0":                  "ghcr.io/vrrp-operator/vrrpd:v1.4.0",
		"v1.4.0-3-g0123abc-dirty": "ghcr.io/vrrp-operator/vrrpd:v1.4.0-3-g0123abc-dirty",
		"dev":                     "ghcr.io/vrrp-operator/vrrpd:dev",
		"v2.0.0+meta":             "ghcr.io/vrrp-operator/vrrpd:v2.0.0-meta",
	} {
		version.Version = v
		if got := defaultVrrpdImage(); got != want {
			t.Errorf("version %q: default vrrpd image %q, want %q", v, got, want)
		}
	}
}

// TestOperatorBinary runs the real command against an envtest API server:
// it elects itself leader, answers /healthz and /readyz, and reconciles a
// group into a DaemonSet running the --vrrpd-image.
func TestOperatorBinary(t *testing.T) {
	if why := testenv.Missing(); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("envtest: " + why)
		}
		t.Skip("envtest: " + why)
	}
	e, err := testenv.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Stop() }()
	t.Setenv("KUBECONFIG", e.AdminKubeconfig(t, "operator"))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	probe := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--vrrpd-image", "example.com/vrrpd:smoke", "--metrics-bind-address", "0",
			"--health-probe-bind-address", probe, "--leader-elect", "--leader-election-namespace", "default", "--log-format", "text",
			"--vrrpd-memory-limit", "200Mi",
			"--vrrpd-image-pull-policy", "Always", "--vrrpd-image-pull-secrets", "regcred, mirror-cred",
			// The group below lives in default, which --group-namespaces must name
			// (its default is keepalived-operator).
			"--group-namespaces", "default"})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()

	c := e.Client
	g := &v1alpha1.KeepalivedGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "smoke"}, Spec: v1alpha1.KeepalivedGroupSpec{Interface: "eth0"}}
	if err := c.Create(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, func() error {
		for _, p := range []string{"/healthz", "/readyz"} {
			resp, err := http.Get("http://" + probe + p)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %s", p, resp.Status)
			}
		}
		var lease coordinationv1.Lease
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "vrrp-operator.redhatcop.redhat.io"}, &lease); err != nil {
			return fmt.Errorf("leader lease: %w", err)
		}
		var ds appsv1.DaemonSet
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "smoke-vrrpd"}, &ds); err != nil {
			return err
		}
		if img := ds.Spec.Template.Spec.Containers[0].Image; img != "example.com/vrrpd:smoke" {
			return fmt.Errorf("image %q", img)
		}
		// The pull settings, as the flags say.
		pod := ds.Spec.Template.Spec
		if pp := pod.Containers[0].ImagePullPolicy; pp != corev1.PullAlways {
			return fmt.Errorf("imagePullPolicy %q", pp)
		}
		if ps := pod.ImagePullSecrets; len(ps) != 2 || ps[0].Name != "regcred" || ps[1].Name != "mirror-cred" {
			return fmt.Errorf("imagePullSecrets %v", ps)
		}
		// The flag's limit, the defaults' requests.
		res := ds.Spec.Template.Spec.Containers[0].Resources
		if res.Limits.Memory().String() != "200Mi" || res.Requests.Memory().IsZero() || res.Requests.Cpu().IsZero() {
			return fmt.Errorf("resources %v", res)
		}
		return nil
	})
}
