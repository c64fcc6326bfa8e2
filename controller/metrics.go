package controller

import (
	"math/big"
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
	"github.com/vrrp-operator/vrrp-operator/internal/ipam"
)

// The operator's own families, served with controller-runtime's on the manager's
// metrics endpoint. Each is per group, labelled namespace and keepalivedgroup: the labels
// the vrrpd PodMonitor gives vrrpd's series (the pods run in the group's namespace), so
// alerts join the two with on (namespace, keepalivedgroup). The operator's
// ServiceMonitor sets honorLabels so that namespace stays the group's, not the
// operator's. Only the leader reconciles, so only its series exist (a standby serves none).
var (
	groupLabels = []string{"namespace", "keepalivedgroup"}
	poolLabels  = []string{"namespace", "keepalivedgroup", "family"}

	groupDegraded = gaugeVec("vrrp_operator_group_degraded", groupLabels,
		"1 while the group's Degraded condition is True (router IDs exhausted, an invalid address pool, an object the operator could not apply), else 0")
	groupNodes = gaugeVec("vrrp_operator_group_nodes", groupLabels,
		"Nodes the group's vrrpd runs on (status.nodeCount): the vrrpd scrape targets Prometheus should have for the group")
	poolSize = gaugeVec("vrrp_operator_pool_size", poolLabels,
		"Addresses the group's addressPool can hand out, per family: exclusions and the network and broadcast addresses of its CIDRs taken off")
	poolAllocated = gaugeVec("vrrp_operator_pool_allocated", poolLabels,
		"Addresses of the group's addressPool that the group's Services hold, per family")
)

// gaugeVec is a gauge family of the operator's, by name, labels and help text.
func gaugeVec(name string, labels []string, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

func init() {
	// controller-runtime's registry: the manager serves it; registered once per
	// process, however many managers a test starts.
	ctrlmetrics.Registry.MustRegister(groupDegraded, groupNodes, poolSize, poolAllocated)
}

var poolFamilies = []ipam.Family{ipam.IPv4, ipam.IPv6}

// recordGroupMetrics sets a group's series from the status just computed and the
// addresses its Services were granted (no API read of its own). A pool that does not
// parse has no pool series (Degraded says why).
func recordGroupMetrics(g *v1alpha1.KeepalivedGroup, st *v1alpha1.KeepalivedGroupStatus, granted map[types.NamespacedName][]netip.Addr) {
	// The group's label value as its pods carry it (labelValue: a name past 63 characters
	// is cut and hashed), which the PodMonitor copies to keepalivedgroup: the join holds.
	ns, name := g.Namespace, labelValue(g.Name)
	degraded := 0.0
	if meta.IsStatusConditionPresentAndEqual(st.Conditions, v1alpha1.ConditionDegraded, metav1.ConditionTrue) {
		degraded = 1
	}
	groupDegraded.WithLabelValues(ns, name).Set(degraded)
	groupNodes.WithLabelValues(ns, name).Set(float64(st.NodeCount))

	var pool *ipam.Pool
	if ap := g.Spec.AddressPool; ap != nil {
		pool, _ = ipam.Parse(rangesToStrings(ap.Addresses), rangesToStrings(ap.ExcludedAddresses))
	}
	if pool == nil {
		forgetPoolMetrics(ns, name)
		return
	}
	// An address shared by several Services (allow-shared-ip) is one address of the pool.
	held := map[netip.Addr]bool{}
	for _, addrs := range granted {
		for _, a := range addrs {
			if pool.Contains(a) {
				held[a] = true
			}
		}
	}
	for _, f := range poolFamilies {
		if !pool.Has(f) {
			poolSize.DeleteLabelValues(ns, name, string(f))
			poolAllocated.DeleteLabelValues(ns, name, string(f))
			continue
		}
		n := 0
		for a := range held {
			if ipam.FamilyOf(a) == f {
				n++
			}
		}
		// An IPv6 pool may exceed 2^53: a float64's nearest value is what a ratio needs.
		size, _ := new(big.Float).SetInt(pool.Allocatable(f)).Float64()
		poolSize.WithLabelValues(ns, name, string(f)).Set(size)
		poolAllocated.WithLabelValues(ns, name, string(f)).Set(float64(n))
	}
}

func forgetPoolMetrics(ns, name string) {
	for _, f := range poolFamilies {
		poolSize.DeleteLabelValues(ns, name, string(f))
		poolAllocated.DeleteLabelValues(ns, name, string(f))
	}
}

// forgetGroupMetrics drops a deleted group's series, so no alert fires for a group gone.
func forgetGroupMetrics(group types.NamespacedName) {
	name := labelValue(group.Name)
	groupDegraded.DeleteLabelValues(group.Namespace, name)
	groupNodes.DeleteLabelValues(group.Namespace, name)
	forgetPoolMetrics(group.Namespace, name)
}
