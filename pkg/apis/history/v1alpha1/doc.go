// +k8s:deepcopy-gen=package
// +groupName=history.heaven.dev
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=dev.heaven.history.v1alpha1

// Package v1alpha1 is the history.heaven.dev API: a heaven's git history
// served by the heaven itself, so that what a user may read and undo is what
// the heaven's RBAC says. Commits are read-only; Diffs compute, like
// Kubernetes' review APIs (created, answered, never stored); Reverts and
// Restores undo through a new commit.
package v1alpha1
