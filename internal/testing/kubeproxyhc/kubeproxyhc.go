// Package kubeproxyhc stands in for kube-proxy's per-Service health check server in
// tests: it answers exactly as kube-proxy does on a Service's healthCheckNodePort
// (k8s.io/kubernetes pkg/proxy/healthcheck/service_health.go): any path; 200 while the
// node has local endpoints (and the proxy is healthy), 503 otherwise; Content-Type
// application/json and X-Content-Type-Options nosniff; a tab-indented JSON body naming
// the Service with its localEndpoints count and serviceProxyHealthy.
package kubeproxyhc

import (
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
)

// Server is one Service's health check on one listener.
type Server struct {
	namespace, name string
	endpoints       atomic.Int64
	unhealthy       atomic.Bool
	srv             *http.Server
	done            chan struct{}
}

// Serve answers on ln (opened by the caller, in whatever network namespace) for the
// Service namespace/name, with no local endpoints until SetEndpoints.
func Serve(ln net.Listener, namespace, name string) *Server {
	s := &Server{namespace: namespace, name: name, done: make(chan struct{})}
	s.srv = &http.Server{Handler: s}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s
}

// SetEndpoints sets the number of ready local endpoints the node has.
func (s *Server) SetEndpoints(n int) { s.endpoints.Store(int64(n)) }

// SetProxyHealthy sets kube-proxy's own health, which also gates the 200.
func (s *Server) SetProxyHealthy(ok bool) { s.unhealthy.Store(!ok) }

// Close stops serving and closes the listener.
func (s *Server) Close() {
	_ = s.srv.Close()
	<-s.done
}

// ServeHTTP answers as kube-proxy's hcHandler does.
func (s *Server) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	n, healthy := s.endpoints.Load(), !s.unhealthy.Load()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if n != 0 && healthy {
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprint(w, Body(s.namespace, s.name, n, healthy))
}

// Body is kube-proxy's answer body: its template with the common indentation removed
// and no leading or trailing newline.
func Body(namespace, name string, endpoints int64, healthy bool) string {
	return fmt.Sprintf("{\n\t\"service\": {\n\t\t\"namespace\": %q,\n\t\t\"name\": %q\n\t},\n\t\"localEndpoints\": %d,\n\t\"serviceProxyHealthy\": %v\n}",
		namespace, name, endpoints, healthy)
}
