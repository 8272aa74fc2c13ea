// Package crds embeds the CustomResourceDefinitions of heaven.dev, which
// heaven-server installs in the root heaven.
package crds

import "embed"

// FS holds every CRD manifest of this directory.
//
//go:embed *.yaml
var FS embed.FS
