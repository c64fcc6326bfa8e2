package controller

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// gathered returns the value of every series of the operator's registry (the one its
// manager serves on /metrics) whose family is name and whose labels include want, keyed
// by its labels written k=v,... in order.
func gathered(t testing.TB, name string, want map[string]string) map[string]float64 {
	t.Helper()
	fams, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			var key []string
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
				key = append(key, l.GetName()+"="+l.GetValue())
			}
			for k, v := range want {
				if have[k] != v {
					continue series
				}
			}
			out[strings.Join(key, ",")] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetCounter().GetValue()
}

// TestOperatorMetrics reconciles, against the API server, a group with a /29 pool
// (6 addresses to hand out) and 3 LoadBalancer Services, and a group whose pool does
// not parse (a range written backwards, which the CRD's CEL lets through): the registry
// says 3 of 6 allocated, the node count of the status, Degraded 0 for the first and 1
// (no pool series) for the second; fixing the pool clears it, and a deleted group's
// series go.
func TestOperatorMetrics(t *testing.T) {
	ns := newNamespace(t, "opmetrics")
	sel := map[string]string{"opmetrics": ns}
	newNodes(t, ns, 2, sel)
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = sel
		withPool("10.99.0.40/29")(g)
	})
	newGroup(t, ns, "bad", func(g *v1alpha1.KeepalivedGroup) {
		g.Spec.NodeSelector = sel
		withPool("10.99.0.60-10.99.0.50")(g)
	})
	startManager(t, ns)
	for i := range 3 {
		newService(t, ns, fmt.Sprintf("s%d", i), ns+"/g", asLoadBalancer)
	}
	g := map[string]string{"namespace": ns, "keepalivedgroup": "g"}
	bad := map[string]string{"namespace": ns, "keepalivedgroup": "bad"}
	one := func(name string, labels map[string]string) (float64, error) {
		got := gathered(t, name, labels)
		if len(got) != 1 {
			return 0, fmt.Errorf("%s%v: %d series %v, want 1", name, labels, len(got), got)
		}
		for _, v := range got {
			return v, nil
		}
		return 0, nil
	}
	check := func(name string, labels map[string]string, want float64) error {
		v, err := one(name, labels)
		if err == nil && v != want {
			err = fmt.Errorf("%s%v = %v, want %v", name, labels, v, want)
		}
		return err
	}
	v4 := map[string]string{"namespace": ns, "keepalivedgroup": "g", "family": "IPv4"}
	eventually(t, 30*time.Second, func() error {
		if n := len(allocated(t, ns)); n != 3 {
			return fmt.Errorf("%d Services have an address", n)
		}
		for _, c := range []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{"vrrp_operator_pool_size", v4, 6},
			{"vrrp_operator_pool_allocated", v4, 3},
			{"vrrp_operator_group_degraded", g, 0},
			{"vrrp_operator_group_nodes", g, 2},
			{"vrrp_operator_group_degraded", bad, 1},
		} {
			if err := check(c.name, c.labels, c.want); err != nil {
				return err
			}
		}
		return nil
	})
	// Every operator family the shipped alerts query is one the operator serves.
	for _, name := range ruleMetricNames(t) {
		if strings.HasPrefix(name, "vrrp_operator_") && len(gathered(t, name, map[string]string{"namespace": ns})) == 0 {
			t.Errorf("deploy/monitoring/prometheusrule.yaml queries %s, which the operator does not serve", name)
		}
	}
	// README's operator metric table is the contract: each row's family served with
	// exactly those labels, and every family of the operator's documented.
	documented := readmeOperatorMetrics(t)
	fams, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "vrrp_operator_") {
			continue
		}
		want, ok := documented[f.GetName()]
		if !ok {
			t.Errorf("%s is served but not in README.md's operator metric table", f.GetName())
			continue
		}
		delete(documented, f.GetName())
		var got []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			got = append(got, l.GetName())
		}
		if strings.Join(got, ", ") != want {
			t.Errorf("%s has labels %v; README.md says %s", f.GetName(), got, want)
		}
	}
	for name := range documented {
		t.Errorf("README.md documents %s, which the operator does not serve", name)
	}
	// The status says the same, and the pool of the bad group has no series.
	if st := getGroup(t, ns, "g").Status; st.NodeCount != 2 {
		t.Errorf("status.nodeCount %d, the metric 2", st.NodeCount)
	}
	if c := meta.FindStatusCondition(getGroup(t, ns, "bad").Status.Conditions, v1alpha1.ConditionDegraded); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonInvalidAddressPool {
		t.Errorf("bad group's Degraded %+v, want True for its pool", c)
	}
	if got := gathered(t, "vrrp_operator_pool_size", bad); len(got) != 0 {
		t.Errorf("a pool that does not parse has size series %v", got)
	}
	if got := gathered(t, "vrrp_operator_pool_size", map[string]string{"namespace": ns, "keepalivedgroup": "g", "family": "IPv6"}); len(got) != 0 {
		t.Errorf("an IPv4-only pool has IPv6 series %v", got)
	}

	// Fixed: no longer degraded, and its pool counted.
	ctx := context.Background()
	b := getGroup(t, ns, "bad")
	b.Spec.AddressPool.Addresses = []v1alpha1.AddressRange{"10.99.0.50-10.99.0.60"}
	if err := k8s.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if err := check("vrrp_operator_group_degraded", bad, 0); err != nil {
			return err
		}
		return check("vrrp_operator_pool_size", map[string]string{"namespace": ns, "keepalivedgroup": "bad", "family": "IPv4"}, 11)
	})

	// Deleted: its series go, so no alert fires for a group that is not there.
	if err := k8s.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		for _, name := range []string{"vrrp_operator_group_degraded", "vrrp_operator_group_nodes", "vrrp_operator_pool_size", "vrrp_operator_pool_allocated"} {
			if got := gathered(t, name, bad); len(got) != 0 {
				return fmt.Errorf("deleted group: %s %v", name, got)
			}
		}
		return nil
	})
}

// ruleMetricNames lists the metric names the shipped PrometheusRule's expressions select.
func ruleMetricNames(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile("../deploy/monitoring/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct{ Alert, Expr string }
			}
		}
	}
	if err := yaml.Unmarshal(b, &rule); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			expr, err := parser.ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("alert %s: %v", r.Alert, err)
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok {
					for _, m := range vs.LabelMatchers {
						if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
							names = append(names, m.Value)
						}
					}
				}
				return nil
			})
		}
	}
	return names
}

// readmeOperatorMetrics reads README.md's table under the header "operator metric": each
// row's name and its labels as written ("namespace, keepalivedgroup").
func readmeOperatorMetrics(t testing.TB) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case !strings.HasPrefix(strings.TrimSpace(line), "|"):
			in = false
		case cells[0] == "operator metric":
			in = true
		case in && len(cells) >= 3 && strings.HasPrefix(cells[0], "`"):
			// Prometheus sorts a series' labels by name.
			labels := strings.Split(cells[2], ", ")
			slices.Sort(labels)
			out[strings.Trim(cells[0], "`")] = strings.Join(labels, ", ")
		}
	}
	if len(out) == 0 {
		t.Fatal("README.md: no operator metric table")
	}
	return out
}
