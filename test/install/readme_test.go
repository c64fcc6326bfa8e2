package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/testenv"
)

// The README's install section sits between these markers; until the README has them,
// the section's draft, INSTALL-README-SECTION.md, is read instead.
const (
	beginMarker = "<!-- install:begin -->"
	endMarker   = "<!-- install:end -->"
)

// installSection returns the install section and the file it came from.
func installSection(t *testing.T) (string, string) {
	t.Helper()
	for _, f := range []string{"README.md", "INSTALL-README-SECTION.md"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		s := string(b)
		i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
		if i >= 0 && j > i {
			return s[i+len(beginMarker) : j], f
		}
	}
	t.Fatalf("no %s ... %s section in README.md or INSTALL-README-SECTION.md", beginMarker, endMarker)
	return "", ""
}

var shBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")

// commands splits a shell block into command lines, without comments and blank lines.
func commands(block string) []string {
	var out []string
	for _, line := range strings.Split(block, "\n") {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

// TestREADMEInstall runs the install section's commands as written, each shell block on a
// cluster of its own (the blocks are alternatives: Kubernetes, OpenShift, Helm) that starts
// without the project's CRD, like a new cluster. The commands run for real, not as a dry
// run: a dry run cannot show that a namespace is created before the objects in it, or that
// the CRD is established before the first group, which is what broke the old README.
func TestREADMEInstall(t *testing.T) {
	testenv.Require(t, env)
	section, file := installSection(t)
	blocks := shBlock.FindAllStringSubmatch(section, -1)
	if len(blocks) == 0 {
		t.Fatalf("%s: no ```sh blocks in the install section", file)
	}
	for i, b := range blocks {
		cmds := commands(b[1])
		if len(cmds) == 0 {
			t.Fatalf("%s: install block %d has no commands", file, i+1)
		}
		t.Run(fmt.Sprintf("block%d", i+1), func(t *testing.T) {
			runInstallBlock(t, cmds)
		})
	}
}

func runInstallBlock(t *testing.T, cmds []string) {
	fresh, cfg := freshCluster(t)
	runCommands(t, cfg, cmds)

	// Whatever the block, the operator's Deployment is there.
	var d appsv1.Deployment
	if err := fresh.Client.Get(context.Background(), types.NamespacedName{Namespace: "vrrp-operator", Name: "vrrp-operator"}, &d); err != nil {
		t.Errorf("after the install: %v", err)
	}
}

// freshCluster starts an API server of its own, without the project's CRD, stopped when
// the test ends, and returns it with an admin kubeconfig.
func freshCluster(t *testing.T) (*testenv.Env, string) {
	t.Helper()
	fresh, err := testenv.Start(func(e *envtest.Environment) {
		e.CRDDirectoryPaths = nil // a new cluster: the README installs the CRD
		// What an OpenShift cluster or one with the Prometheus operator serves.
		e.CRDs = []*apiextensionsv1.CustomResourceDefinition{
			openCRD("security.openshift.io", "SecurityContextConstraints", "securitycontextconstraints", apiextensionsv1.ClusterScoped),
			openCRD("monitoring.coreos.com", "ServiceMonitor", "servicemonitors", apiextensionsv1.NamespaceScoped),
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fresh.Stop(); err != nil {
			t.Error(err)
		}
	})
	return fresh, fresh.AdminKubeconfig(t, "admin")
}

// runCommands runs kubectl and helm command lines as written, and returns each one's output.
func runCommands(t *testing.T, kubeconfig string, cmds []string) []string {
	t.Helper()
	var outs []string
	for _, line := range cmds {
		// The lines are plain words; quoting would need a shell, and a split that ignored
		// it would test something other than what users run.
		if strings.ContainsAny(line, `"'$|&;<>()\`+"`") {
			t.Fatalf("%q: the README's commands must be plain words", line)
		}
		words := strings.Fields(line)
		var name string
		var argv []string
		switch words[0] {
		case "kubectl":
			name, argv = kubectlPath(t), words[1:]
		case "helm":
			h := helmCommand(t)
			name, argv = h[0], append(append([]string{}, h[1:]...), words[1:]...)
		default:
			t.Fatalf("%q: only kubectl and helm commands are tested", line)
		}
		out, err := run(t, []string{"KUBECONFIG=" + kubeconfig}, nil, name, argv...)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		t.Logf("%s\n%s", line, out)
		outs = append(outs, string(out))
	}
	return outs
}
