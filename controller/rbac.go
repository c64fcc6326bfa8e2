package controller

// The operator's ClusterRole, generated into deploy/operator/rbac by
// `make manifests`.
//
// Not here: what only the takeover from keepalived-operator needs (migration.go:
// list a group's old Pods, get and delete its old ConfigMap) is a Role in each
// namespace that may hold groups (deploy/operator/policy/groups_namespace.yaml,
// the chart's policy.yaml), not a cluster-wide right to every Pod's environment
// and every ConfigMap. What the operator may write with the rights below is
// narrowed by the install's ValidatingAdmissionPolicy
// (deploy/operator/policy/admission_policy.yaml): vrrpd-shaped DaemonSets,
// ServiceAccounts, Roles, RoleBindings and PodMonitors in those namespaces.
//
// KeepalivedMasterships: the operator creates one per group (mastership.go);
// it holds get and update on their status only so that it may grant them to
// vrrpd's Role (RBAC lets nobody grant what they do not hold), and watch for
// the same reason besides its cache.
//
// Namespaces: read for their labels, which a group's allowedNamespaces
// selector matches (tenancy.go), and for their Pod Security label, to warn on
// a group whose namespace will refuse vrrpd's pods (podsecurity.go).
//
// No Secrets: neither the operator nor vrrpd reads one. A group's password
// reaches vrrpd as a Secret volume in its DaemonSet's pods, which the kubelet
// reads with the node's credentials; the operator only names the Secret.
// (Before, vrrpd got the Secret through the API, and Kubernetes lets the
// operator grant get on it in vrrpd's Role only while holding that access
// itself: cluster-wide read of every Secret.)
//
// +kubebuilder:rbac:groups=redhatcop.redhat.io,resources=keepalivedgroups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=redhatcop.redhat.io,resources=keepalivedgroups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=redhatcop.redhat.io,resources=keepalivedgroups/finalizers,verbs=update
// +kubebuilder:rbac:groups=redhatcop.redhat.io,resources=keepalivedmasterships,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=redhatcop.redhat.io,resources=keepalivedmasterships/status,verbs=get;update
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=services/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=podmonitors,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
