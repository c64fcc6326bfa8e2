package controller

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// statusBudget is the most bytes the bulk of a group's status (its nodes,
// instances and routerIDs, as JSON) may take; a variable so that a test can
// lower it.
//
// The API server refuses a request over about 1.5 MiB (and etcd a value
// over its own limit), so a status that outgrew that would never be written
// again: the group would keep serving its old status, whatever changed. The
// issue asks every object under 512 KiB. 448 KiB leaves 64 KiB of that for
// the group's spec, metadata and managedFields (small: routerIDs is an
// atomic map, instances and nodes atomic lists) and its conditions. With
// shared routers it holds about 7,000 Services of one group with names of
// 50 bytes (TestStatusBudget), and the 500 Services a group on 500
// Nodes (about 120 KiB) nearly four times over.
var statusBudget = 448 << 10

// statusBytes is the size of the part of a group's status that grows with
// its Services and Nodes: the JSON of its nodes, instances and routerIDs.
func statusBytes(p plan) int {
	raw, err := json.Marshal(v1alpha1.KeepalivedGroupStatus{Nodes: p.nodes, Instances: p.instances, RouterIDs: p.routerIDs})
	if err != nil {
		// Not reachable with these types; count it as too large.
		return statusBudget + 1
	}
	return len(raw)
}

// fitStatus returns p when its status fits statusBudget; otherwise the plan of
// the oldest Services whose status fits (replan plans a subset of services),
// the others in p.statusFull. Newest means the latest creationTimestamp, then
// the key sorting last (one-second timestamps tie), so the Services left out
// are the ones added last and an existing Service never loses its VIP to a
// newcomer. The kept set is the longest such prefix that fits: adding a
// Service never shrinks a status, so that prefix is found by search.
func fitStatus(p plan, services []corev1.Service, replan func([]corev1.Service) plan) plan {
	size := statusBytes(p)
	if size <= statusBudget {
		return p
	}
	served := servedServices(p)
	var order []corev1.Service // the served Services, oldest first
	for i := range services {
		if served[types.NamespacedName{Namespace: services[i].Namespace, Name: services[i].Name}] {
			order = append(order, services[i])
		}
	}
	slices.SortFunc(order, func(a, b corev1.Service) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	others := slices.DeleteFunc(slices.Clone(services), func(s corev1.Service) bool {
		return served[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}]
	})
	plans := map[int]plan{len(order): p}
	planOf := func(m int) plan {
		if q, ok := plans[m]; ok {
			return q
		}
		q := replan(append(slices.Clone(others), order[:m]...))
		plans[m] = q
		return q
	}
	// lo fits (0 Services: a status of nodes alone, or Local-only
	// instances left out with the rest), hi does not. A Service adds about
	// the same bytes as the next (its key, its addresses; a router's
	// priorities are few and per router), so the line between the sizes at
	// lo and hi lands within a few Services of the answer: each round
	// tries that point and its neighbour, and bisects after a few rounds
	// in case it does not.
	lo, hi := 0, len(order)
	sizeAt := func(m int) int { return statusBytes(planOf(m)) }
	for round := 0; hi-lo > 1; round++ {
		m := lo + (hi-lo)/2
		if sl, sh := sizeAt(lo), sizeAt(hi); round < 4 && sh > sl {
			m = lo + int(int64(statusBudget-sl)*int64(hi-lo)/int64(sh-sl))
		}
		m = min(max(m, lo+1), hi-1)
		if sizeAt(m) <= statusBudget {
			lo = m
			if m+1 < hi && sizeAt(m+1) > statusBudget {
				hi = m + 1
			}
		} else {
			hi = m
			if m-1 > lo && sizeAt(m-1) <= statusBudget {
				lo = m - 1
			}
		}
	}
	out := planOf(lo)
	for _, s := range order[lo:] {
		out.statusFull = append(out.statusFull, types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
	}
	slices.SortFunc(out.statusFull, func(a, b types.NamespacedName) int { return cmp.Compare(a.String(), b.String()) })
	return out
}

// servedServices are the Services a plan gives a router ID to: the first two
// parts of each routerIDs key ("ns/name", or "ns/name/ip" of a spreadvips
// VIP), in either mode.
func servedServices(p plan) map[types.NamespacedName]bool {
	out := make(map[types.NamespacedName]bool, len(p.routerIDs))
	for k := range p.routerIDs {
		parts := strings.SplitN(k, "/", 3)
		if len(parts) >= 2 {
			out[types.NamespacedName{Namespace: parts[0], Name: parts[1]}] = true
		}
	}
	return out
}

// describeStatusFull is the Degraded message when Services were left out for
// the status' size.
func describeStatusFull(services int) string {
	return fmt.Sprintf("%d Service(s), the newest, left out without VIPs: with them the group's status would exceed %d KiB (the operator keeps every object under 512 KiB; the API server refuses about 1.5 MiB); spread the Services over more KeepalivedGroups (annotation %s)",
		services, statusBudget>>10, v1alpha1.AnnotationGroup)
}
