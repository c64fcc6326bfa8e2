package controller

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// parseGroupRef reads the keepalivedgroup annotation, "namespace/name".
// The original operator indexed the halves of strings.Split without
// checking and panicked on a value without a slash (its issue 132); here
// every malformed value is an error that names the problem.
func parseGroupRef(s string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok {
		return types.NamespacedName{}, fmt.Errorf("%s %q: want <namespace>/<name>", v1alpha1.AnnotationGroup, s)
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return types.NamespacedName{}, fmt.Errorf("%s %q: namespace %q: %s", v1alpha1.AnnotationGroup, s, ns, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return types.NamespacedName{}, fmt.Errorf("%s %q: name %q: %s", v1alpha1.AnnotationGroup, s, name, strings.Join(errs, "; "))
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// groupOf returns the group a Service is annotated for, if the annotation
// is present and well formed.
func groupOf(svc *corev1.Service) (types.NamespacedName, bool) {
	v, ok := svc.Annotations[v1alpha1.AnnotationGroup]
	if !ok {
		return types.NamespacedName{}, false
	}
	ref, err := parseGroupRef(v)
	return ref, err == nil
}

// classIsOurs: a Service without spec.loadBalancerClass, or with ours, is
// served; one naming another class belongs to that class's implementation.
func classIsOurs(svc *corev1.Service) bool {
	return svc.Spec.LoadBalancerClass == nil || *svc.Spec.LoadBalancerClass == v1alpha1.LoadBalancerClass
}

// isInstanceSource reports whether an annotated Service yields VRRP
// instances: type LoadBalancer (of our class) or any type with externalIPs,
// and not being deleted (its VIPs are being released).
func isInstanceSource(svc *corev1.Service) bool {
	if svc.DeletionTimestamp != nil || !classIsOurs(svc) {
		return false
	}
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer || len(svc.Spec.ExternalIPs) > 0
}

// serviceVIPs returns status.loadBalancer.ingress[].ip and spec.externalIPs,
// deduplicated and sorted (IPv4 before IPv6, numerically), and the entries
// that are not IP addresses.
func serviceVIPs(svc *corev1.Service) (vips []netip.Addr, bad []string) {
	add := func(s string) {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" || a.Is4In6() {
			bad = append(bad, s)
			return
		}
		vips = append(vips, a)
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			add(in.IP)
		}
	}
	for _, s := range svc.Spec.ExternalIPs {
		add(s)
	}
	slices.SortFunc(vips, func(a, b netip.Addr) int { return a.Compare(b) })
	return slices.Compact(vips), bad
}

// spreadVIPs reports the spreadvips annotation; anything but "true" is
// false, as in the original.
func spreadVIPs(svc *corev1.Service) bool {
	return svc.Annotations[v1alpha1.AnnotationSpreadVIPs] == "true"
}

// parseVerbatim reads the verbatimconfig annotation: a JSON object of
// vrrp_instance keywords and values. It returns the entries a Service may set
// (v1alpha1.OwnerUser in the keyword table, package keyword) and a description of every
// entry it dropped: keywords the operator decides, keywords that would run a
// program, and keys that are no vrrp_instance keyword at all (a typo or a
// global_defs keyword, reported rather than passed on silently). A value that
// is not a JSON object of strings drops the whole annotation.
func parseVerbatim(s string) (map[string]string, []string) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var raw map[string]string
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, []string{fmt.Sprintf("%s is not a JSON object of strings: %v", v1alpha1.AnnotationVerbatimConfig, err)}
	}
	var problems []string
	out := make(map[string]string, len(raw))
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		// The keyword table's one wording, shared with vrrpd's warnings.
		if problem := v1alpha1.VerbatimProblem(k, raw[k]); problem != "" {
			problems = append(problems, fmt.Sprintf("%s key %q %s; ignored", v1alpha1.AnnotationVerbatimConfig, k, problem))
			continue
		}
		out[k] = raw[k]
	}
	if len(out) == 0 {
		out = nil
	}
	return out, problems
}
