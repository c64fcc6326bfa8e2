package controller

// The operator's ClusterRole, generated into deploy/operator/rbac by
// `make manifests`.
//
// Secrets: the operator never reads a Secret, but Kubernetes only lets it
// create a Role granting get on a group's password Secret if it holds that
// permission itself. The alternative, the escalate and bind verbs on Roles,
// would let it grant anything; read access to Secrets is the smaller power.
//
// +kubebuilder:rbac:groups=redhatcop.redhat.io,resources=keepalivedgroups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=redhatcop.redhat.io,resources=keepalivedgroups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=redhatcop.redhat.io,resources=keepalivedgroups/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=services/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=podmonitors,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
