// Package history serves a heaven's git history inside the heaven, as the
// history.heaven.dev API (pkg/apis/history/v1alpha1): its commits, diffs
// between revisions (or another heaven's head), and reverts and restores
// that undo through a new commit. Being part of the heaven's API server, it
// is authenticated, authorized by the heaven's RBAC and audited as any of
// the heaven's resources; reverts and restores also check that the user may
// write every object they change, as if the user wrote it.
package history

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/heaven-dev/heaven/pkg/apigroups"
	"github.com/heaven-dev/heaven/pkg/apis/history/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// Config is what a heaven's history API reads and writes.
type Config struct {
	// Heaven whose branch is served.
	Heaven string
	Repo   *gitstore.Repository
	// Authorizer decides whether the user may write each object a revert
	// or restore changes (the heaven's authorizer).
	Authorizer authorizer.Authorizer
	// MayRead says whether the request's user may read another heaven's
	// history (a Diff against it); nil: diffs stay within the heaven.
	MayRead func(ctx context.Context, heaven string) error
	// Serving is the server's configuration the handlers are built with.
	Serving apigroups.Serving
}

// Scheme holds the history API's types: each registered for its version
// and as the internal version, so that the API server needs no
// conversions.
var Scheme = newScheme()

// Codecs serialize the history API.
var Codecs = serializer.NewCodecFactory(Scheme)

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	internal := schema.GroupVersion{Group: v1alpha1.GroupName, Version: runtime.APIVersionInternal}
	s.AddKnownTypes(internal, &v1alpha1.Commit{}, &v1alpha1.CommitList{}, &v1alpha1.Diff{}, &v1alpha1.Revert{}, &v1alpha1.Restore{}, &v1alpha1.Merge{})
	for _, gv := range []schema.GroupVersion{v1alpha1.SchemeGroupVersion, internal} {
		// Commits are selected by the objects they changed.
		err := s.AddFieldLabelConversionFunc(gv.WithKind("Commit"), func(label, value string) (string, string, error) {
			switch label {
			case "metadata.name", v1alpha1.PathField:
				return label, value, nil
			}
			return "", "", fmt.Errorf("field label not supported: %s", label)
		})
		if err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	s.AddUnversionedTypes(schema.GroupVersion{Version: "v1"},
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	return s
}

// Install serves the history of c.Heaven in s.
func Install(s *genericapiserver.GenericAPIServer, c Config) error {
	if c.Repo == nil || c.Authorizer == nil {
		return fmt.Errorf("history of heaven %s: no repository or authorizer", c.Heaven)
	}
	info := genericapiserver.NewDefaultAPIGroupInfo(v1alpha1.GroupName, Scheme, runtime.NewParameterCodec(Scheme), Codecs)
	info.VersionedResourcesStorageMap[v1alpha1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"commits":  &commits{c},
		"diffs":    &diffs{c},
		"reverts":  &reverts{c},
		"restores": &restores{c},
		"merges":   &merges{c},
	}
	return apigroups.Install(s, c.Serving, genericapiserver.APIGroupPrefix, []*genericapiserver.APIGroupInfo{&info})
}

// branch opens the heaven's branch (it is open while the heaven runs).
func (c Config) branch(ctx context.Context) (*gitstore.Branch, error) {
	return c.Repo.Branch(ctx, c.Heaven)
}
