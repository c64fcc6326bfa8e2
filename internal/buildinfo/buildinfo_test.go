package buildinfo

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vrrp-operator/vrrp-operator/internal/version"
)

func TestCollector(t *testing.T) {
	old := version.Version
	t.Cleanup(func() { version.Version = old })
	version.Version = "v9.9.9"
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector("vrrpd"))
	want := `# HELP vrrpd_build_info A metric with a constant '1' value labelled by the version and Go version vrrpd was built from
# TYPE vrrpd_build_info gauge
vrrpd_build_info{goversion="` + runtime.Version() + `",version="v9.9.9"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "vrrpd_build_info"); err != nil {
		t.Error(err)
	}
}
