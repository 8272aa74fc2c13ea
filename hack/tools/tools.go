//go:build tools

// Package tools records the code generators built from this module, so that
// `go mod tidy` keeps them in go.mod (kubectl needs no entry here: its main
// package is in kubectl/). The root Makefile builds them into .cache/bin
// (`make tools`); nothing builds this file itself.
package tools

import (
	_ "k8s.io/kube-openapi/cmd/openapi-gen"
)
