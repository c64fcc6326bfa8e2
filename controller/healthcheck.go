package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// healthCheck is the check vrrpd runs for svc's instances: kube-proxy's answer on the
// Service's healthCheckNodePort, which Kubernetes allocates for a LoadBalancer Service
// with externalTrafficPolicy: Local. It comes from the Service's spec alone, which only
// the API server's rules shape: no annotation or verbatimconfig key can set or change it,
// so a Service's owner cannot make vrrpd probe anything else. A Service with the policy
// but no port (externalIPs on a ClusterIP or NodePort Service) has nothing kube-proxy
// answers, and gets no check.
func healthCheck(svc *corev1.Service) *v1alpha1.HealthCheck {
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		return nil
	}
	p := svc.Spec.HealthCheckNodePort
	if p < 1 || p > 65535 {
		return nil
	}
	return &v1alpha1.HealthCheck{NodePort: p}
}
