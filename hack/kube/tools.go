//go:build tools

// Package tools records the Kubernetes commands built from this module, so
// that `go mod tidy` keeps them in go.mod. The root Makefile builds them into
// .cache/bin (`make kube-binaries`); nothing builds this file itself.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
