// Package install tests the ways the operator is installed: the kustomizations under
// deploy/ (the install, deploy/operator; the OpenShift overlay; the ServiceMonitor
// component) and the Helm chart, rendered with the kubectl that `make envtest` builds and
// the Helm that the Makefile pins ($HELM), checked for shape, compared with each other and
// applied to a real API server (envtest). It also runs the README's install commands, and
// applies every install to a second API server of the floor's version (floor_test.go).
//
// The package has no code outside its tests; this file only carries its documentation.
package install
