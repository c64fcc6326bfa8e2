// Package e2e holds the end-to-end test of the whole product in Kubernetes mode: a real API
// server (envtest), the operator running in the test process, and the real vrrpd binary in
// network namespaces (internal/netlab) started with the arguments of the DaemonSet the
// operator wrote, authenticated with a token of the ServiceAccount the operator made, so
// that the operator's Role is what lets vrrpd read its group.
//
// The API server listens on 127.0.0.1 in the root namespace, where no lab host can reach
// it. The test opens a listener inside the client host's namespace (10.99.0.10:6443) and
// forwards each connection to the API server from the root namespace; vrrpd's kubeconfig
// points there, with the serving certificate's name as tls-server-name. Stopping that
// proxy is how the test takes the API server away.
//
// Each vrrpd's log goes to the test log when the test fails (E2E_LOGS=1: always), with
// the group's status; E2E_LOG_DIR=DIR also keeps each whole in a file there.
//
// The scale labs of issue 31 (scalelab_test.go: failover, movement and the switch to shared
// routers with 2,000 Services) take E2E_SCALE_SERVICES=N to run at N Services instead, to
// see how the figures grow. They are part of make test (about five minutes together);
// make scale-labs runs them alone.
//
// The test needs root (namespaces) and the envtest binaries; it skips without them unless
// CI=true, where it fails.
package e2e
