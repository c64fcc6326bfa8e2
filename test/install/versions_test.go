package install

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// releaseVersion reads the version the install names: the chart's appVersion (the git
// tag, make release VERSION=...).
func releaseVersion(t *testing.T) (chartVersion, appVersion string) {
	t.Helper()
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(readFile(t, chartDir+"/Chart.yaml"), &chart); err != nil {
		t.Fatal(err)
	}
	return chart.Version, chart.AppVersion
}

// vrrpdSettings are the vrrpd image the install's operator runs and its policy allows,
// and the operator's own image.
func vrrpdSettings(t *testing.T, objs []*unstructured.Unstructured, name string) (operatorImage, vrrpdImage, policyImage string, a []string) {
	t.Helper()
	deploy := find(t, objs, "Deployment", name)
	a = args(t, deploy)
	for _, x := range a {
		if v, ok := strings.CutPrefix(x, "--vrrpd-image="); ok {
			vrrpdImage = v
		}
	}
	data, _ := field(t, find(t, objs, "ConfigMap", name+"-policy"), "data").(map[string]any)
	policyImage, _ = data["vrrpdImage"].(string)
	operatorImage, _ = container(t, deploy)["image"].(string)
	return operatorImage, vrrpdImage, policyImage, a
}

// TestInstallsNameTheVersion: the kustomize install and the chart's defaults run the
// images of one version, the chart's appVersion (which make release sets with the rest),
// never :latest: the operator's image, and vrrpd's in the operator's flag and in the
// admission policy's parameters. The chart's version is appVersion without its v.
func TestInstallsNameTheVersion(t *testing.T) {
	chartVersion, appVersion := releaseVersion(t)
	if appVersion == "" || appVersion == "latest" || strings.TrimPrefix(appVersion, "v") != chartVersion {
		t.Errorf("Chart.yaml: version %q appVersion %q, want appVersion v<version>", chartVersion, appVersion)
	}
	want := [3]string{"ghcr.io/vrrp-operator/operator:" + appVersion, "ghcr.io/vrrp-operator/vrrpd:" + appVersion, "ghcr.io/vrrp-operator/vrrpd:" + appVersion}
	for name, r := range map[string][]byte{
		"deploy/operator":  kustomize(t, "deploy/operator"),
		"deploy/openshift": kustomize(t, "deploy/openshift"),
		"chart":            mustHelmTemplate(t),
	} {
		op, vrrpd, policy, _ := vrrpdSettings(t, decode(t, r), "vrrp-operator")
		if got := [3]string{op, vrrpd, policy}; got != want {
			t.Errorf("%s: operator %q, --vrrpd-image %q, policy vrrpdImage %q; want %q", name, op, vrrpd, policy, want)
		}
	}
}

// TestChartVrrpdImage: vrrpd's tag follows the operator's (image.tag) unless
// vrrpd.image.tag pins it; the pull policy and secrets become the operator's flags; the
// old plain-string vrrpdImage is refused, not ignored.
func TestChartVrrpdImage(t *testing.T) {
	for _, tc := range []struct {
		set          []string
		vrrpd        string
		policy, pull string
	}{
		{[]string{"--set", "image.tag=v9.1.0"}, "ghcr.io/vrrp-operator/vrrpd:v9.1.0", "", ""},
		{[]string{"--set", "image.tag=v9.1.0", "--set", "vrrpd.image.tag=v8.0.0", "--set", "vrrpd.image.repository=mirror.example/vrrpd"},
			"mirror.example/vrrpd:v8.0.0", "", ""},
		{[]string{"--set", "vrrpd.image.pullPolicy=Always", "--set", "vrrpd.imagePullSecrets[0].name=regcred", "--set", "vrrpd.imagePullSecrets[1]=mirror-cred"},
			"", "--vrrpd-image-pull-policy=Always", "--vrrpd-image-pull-secrets=regcred,mirror-cred"},
	} {
		op, vrrpd, policy, a := vrrpdSettings(t, decode(t, mustHelmTemplate(t, tc.set...)), "vrrp-operator")
		if tc.vrrpd != "" && (vrrpd != tc.vrrpd || policy != tc.vrrpd) {
			t.Errorf("%v: --vrrpd-image %q, policy vrrpdImage %q, want %q (operator %q)", tc.set, vrrpd, policy, tc.vrrpd, op)
		}
		for _, want := range []string{tc.policy, tc.pull} {
			if want != "" && !slices.Contains(a, want) {
				t.Errorf("%v: args %v lack %s", tc.set, a, want)
			}
		}
		if tc.policy == "" && tc.pull == "" {
			for _, x := range a {
				if strings.HasPrefix(x, "--vrrpd-image-pull-") {
					t.Errorf("%v: %s without a pull value", tc.set, x)
				}
			}
		}
	}
	if _, err := helmTemplate(t, "--set", "vrrpdImage=registry.example/vrrpd:v1"); err == nil || !strings.Contains(err.Error(), "vrrpd.image.repository") {
		t.Errorf("vrrpdImage set: %v, want a failure pointing at vrrpd.image", err)
	}
}
