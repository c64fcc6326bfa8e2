package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of KeepalivedGroup, the same as
// the original keepalived-operator's.
var GroupVersion = schema.GroupVersion{Group: "redhatcop.redhat.io", Version: "v1alpha1"}

var (
	// SchemeBuilder registers this package's types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds KeepalivedGroup, KeepalivedMastership and their lists to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &KeepalivedGroup{}, &KeepalivedGroupList{}, &KeepalivedMastership{}, &KeepalivedMastershipList{})
	// metav1 types (ListOptions, DeleteOptions, ...) for this group version,
	// so clients can list and watch it.
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
