// +k8s:deepcopy-gen=package
// +groupName=heaven.dev

// Package v1alpha1 is the heaven.dev/v1alpha1 API: the objects through which
// heaven-server is configured, served as CRDs (config/crds) in the root
// heaven. Its clientset, informers and listers are generated into
// pkg/generated (make generate), and controllers read and write these types
// through them.
package v1alpha1
