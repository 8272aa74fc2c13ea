//go:build tools

// Package tools records the kwok command built from this module, so that
// `go mod tidy` keeps it in go.mod. The root Makefile builds it into
// .cache/bin (`make kwok`): the node agent of the headless cluster e2e test,
// which simulates nodes and their pods' lifecycles against a heaven.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
