/*
Copyright The Heaven Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package openapi

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	apiopenapi "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// servedKinds are the objects the server serves natively from k8s.io/api
// types, plus the meta/v1 types every API server needs.
var servedKinds = []runtime.Object{
	&corev1.Namespace{}, &corev1.NamespaceList{},
	&corev1.ConfigMap{}, &corev1.ConfigMapList{},
	&corev1.Secret{}, &corev1.SecretList{},
	&corev1.ServiceAccount{}, &corev1.ServiceAccountList{},
	&corev1.Event{}, &corev1.EventList{},
	&eventsv1.Event{}, &eventsv1.EventList{},
	&coordinationv1.Lease{}, &coordinationv1.LeaseList{},
	&appsv1.Deployment{}, &appsv1.DeploymentList{},
	&autoscalingv1.Scale{},
}

// refPrefix is what testRef puts in front of a definition name.
const refPrefix = "#/definitions/"

// testRef is a ReferenceCallback that records every name it is asked for.
func testRef(names map[string]bool) common.ReferenceCallback {
	return func(name string) spec.Ref {
		names[name] = true
		return spec.MustCreateRef(refPrefix + common.EscapeJsonPointer(name))
	}
}

// collectRefs adds the target of every "$ref" found anywhere in v (a
// schema decoded from JSON) to refs.
func collectRefs(v any, refs map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "$ref" {
				refs[s] = true
				continue
			}
			collectRefs(e, refs)
		}
	case []any:
		for _, e := range v {
			collectRefs(e, refs)
		}
	}
}

func TestNoDanglingReferences(t *testing.T) {
	asked := map[string]bool{}
	defs := GetOpenAPIDefinitions(testRef(asked))
	if len(defs) == 0 {
		t.Fatal("GetOpenAPIDefinitions returned no definitions")
	}

	// Names the generated code passed to the reference callback.
	for name := range asked {
		if _, ok := defs[name]; !ok {
			t.Errorf("reference to %q, which has no definition", name)
		}
	}

	total := 0
	for name, def := range defs {
		// Declared dependencies.
		for _, dep := range def.Dependencies {
			if _, ok := defs[dep]; !ok {
				t.Errorf("%s depends on %q, which has no definition", name, dep)
			}
		}
		// Every $ref in the schema, wherever it is nested.
		raw, err := json.Marshal(def.Schema)
		if err != nil {
			t.Fatalf("%s: marshal schema: %v", name, err)
		}
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: unmarshal schema: %v", name, err)
		}
		refs := map[string]bool{}
		collectRefs(doc, refs)
		total += len(refs)
		for r := range refs {
			target, ok := strings.CutPrefix(r, refPrefix)
			if !ok {
				t.Errorf("%s: $ref %q is not a local definition", name, r)
				continue
			}
			target = strings.NewReplacer("~1", "/", "~0", "~").Replace(target)
			if _, ok := defs[target]; !ok {
				t.Errorf("%s: $ref to %q, which has no definition", name, target)
			}
			if !contains(def.Dependencies, target) {
				t.Errorf("%s: $ref to %q is missing from its Dependencies", name, target)
			}
		}
	}
	if total == 0 || len(asked) == 0 {
		t.Errorf("found %d $refs and %d referenced names; the check is not looking at the schemas", total, len(asked))
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func TestServedKindsHaveDefinitions(t *testing.T) {
	defs := GetOpenAPIDefinitions(testRef(map[string]bool{}))
	want := []string{
		"io.k8s.api.core.v1.ConfigMap",
		"io.k8s.api.apps.v1.Deployment",
		"io.k8s.api.autoscaling.v1.Scale",
		"io.k8s.api.coordination.v1.Lease",
		"io.k8s.api.events.v1.Event",
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
		"io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
		"io.k8s.apimachinery.pkg.apis.meta.v1.Status",
		"io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
		"io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
		"io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
		"io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList",
		"io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
		"io.k8s.apimachinery.pkg.runtime.RawExtension",
		"io.k8s.apimachinery.pkg.util.intstr.IntOrString",
		"io.k8s.apimachinery.pkg.api.resource.Quantity",
		"io.k8s.apimachinery.pkg.version.Info",
	}
	// The definition of every served kind must be found under the name the
	// API server derives from its Go type.
	for _, obj := range servedKinds {
		want = append(want, canonicalName(obj))
	}
	for _, name := range want {
		if _, ok := defs[name]; !ok {
			t.Errorf("no definition for %q", name)
		}
	}
}

// canonicalName is the definition name k8s.io/apiserver looks up for obj.
func canonicalName(obj runtime.Object) string {
	return obj.(interface{ OpenAPIModelName() string }).OpenAPIModelName()
}

// TestDeploymentPatchExtensions checks the list extensions kubectl's
// strategic merge patch and server-side apply rely on.
func TestDeploymentPatchExtensions(t *testing.T) {
	defs := GetOpenAPIDefinitions(testRef(map[string]bool{}))
	podSpec, ok := defs["io.k8s.api.core.v1.PodSpec"]
	if !ok {
		t.Fatal("no definition for io.k8s.api.core.v1.PodSpec")
	}
	containers, ok := podSpec.Schema.Properties["containers"]
	if !ok {
		t.Fatal("PodSpec has no containers property")
	}
	ext := containers.Extensions
	for key, want := range map[string]any{
		"x-kubernetes-list-type":       "map",
		"x-kubernetes-patch-merge-key": "name",
		"x-kubernetes-patch-strategy":  "merge",
	} {
		if got := ext[key]; got != want {
			t.Errorf("PodSpec.containers %s = %v, want %v", key, got, want)
		}
	}
	if got := ext["x-kubernetes-list-map-keys"]; !reflect.DeepEqual(got, []any{"name"}) {
		t.Errorf("PodSpec.containers x-kubernetes-list-map-keys = %v, want [name]", got)
	}

	// Deployment -> DeploymentSpec -> PodTemplateSpec -> PodSpec.
	for _, step := range []struct{ def, prop, to string }{
		{"io.k8s.api.apps.v1.Deployment", "spec", "io.k8s.api.apps.v1.DeploymentSpec"},
		{"io.k8s.api.apps.v1.DeploymentSpec", "template", "io.k8s.api.core.v1.PodTemplateSpec"},
		{"io.k8s.api.core.v1.PodTemplateSpec", "spec", "io.k8s.api.core.v1.PodSpec"},
	} {
		prop, ok := defs[step.def].Schema.Properties[step.prop]
		if !ok {
			t.Fatalf("%s has no %s property", step.def, step.prop)
		}
		ref := prop.Ref.String()
		if len(prop.AllOf) == 1 { // a $ref with a default is wrapped in allOf
			ref = prop.AllOf[0].Ref.String()
		}
		if want := refPrefix + step.to; ref != want {
			t.Errorf("%s.%s refers to %q, want %q", step.def, step.prop, ref, want)
		}
	}
}

// testScheme registers the served groups, as the server's scheme does.
func testScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme,
		appsv1.AddToScheme,
		autoscalingv1.AddToScheme,
		coordinationv1.AddToScheme,
		eventsv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	return scheme
}

// TestTypeConverter builds the server-side apply type converter the way
// k8s.io/apiserver does when it installs an API group, and converts an
// object of each served kind with it.
func TestTypeConverter(t *testing.T) {
	scheme := testScheme(t)
	namer := apiopenapi.NewDefinitionNamer(scheme)
	config := genericapiserver.DefaultOpenAPIV3Config(GetOpenAPIDefinitions, namer)

	var names []string
	for _, obj := range servedKinds {
		names = append(names, canonicalName(obj))
	}
	sort.Strings(names)
	models, err := builder3.BuildOpenAPIDefinitionsForResources(config, names...)
	if err != nil {
		t.Fatalf("BuildOpenAPIDefinitionsForResources: %v", err)
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		t.Fatalf("NewTypeConverter: %v", err)
	}

	replicas := int32(2)
	objects := []runtime.Object{
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default"},
			Data:       map[string]string{"a": "b"},
		},
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}},
		&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}},
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}},
		&corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"}},
		&eventsv1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"}},
		&coordinationv1.Lease{TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}},
		&autoscalingv1.Scale{
			TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
			Spec:     autoscalingv1.ScaleSpec{Replicas: 3},
		},
		&appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{
						{Name: "web", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}},
						{Name: "sidecar", Image: "busybox"},
					}},
				},
			},
		},
	}
	for _, obj := range objects {
		kind := obj.GetObjectKind().GroupVersionKind()
		typed, err := tc.ObjectToTyped(obj)
		if err != nil {
			t.Errorf("%v: ObjectToTyped: %v", kind, err)
			continue
		}
		if err := typed.Validate(); err != nil {
			t.Errorf("%v: Validate: %v", kind, err)
		}
		set, err := typed.ToFieldSet()
		if err != nil {
			t.Errorf("%v: ToFieldSet: %v", kind, err)
			continue
		}
		// The containers list must be a map keyed by name, so the field set
		// names a container by its key, not by its index.
		if kind.Kind == "Deployment" {
			sidecarImage := fieldpath.MakePathOrDie("spec", "template", "spec", "containers",
				fieldpath.KeyByFields("name", "sidecar"), "image")
			if !set.Has(sidecarImage) {
				t.Errorf("Deployment field set has no %s; containers not keyed by name?\n%s", sidecarImage, set)
			}
		}
	}
}

// BenchmarkGetOpenAPIDefinitions measures one call, as the server makes for
// each logical cluster.
func BenchmarkGetOpenAPIDefinitions(b *testing.B) {
	ref := func(name string) spec.Ref {
		return spec.MustCreateRef("#/components/schemas/" + common.EscapeJsonPointer(name))
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = GetOpenAPIDefinitions(ref)
	}
}

// BenchmarkTypeConverter measures building the server-side apply type
// converter for the served kinds from scratch.
func BenchmarkTypeConverter(b *testing.B) {
	scheme := testScheme(b)
	namer := apiopenapi.NewDefinitionNamer(scheme)
	var names []string
	for _, obj := range servedKinds {
		names = append(names, canonicalName(obj))
	}
	b.ReportAllocs()
	for b.Loop() {
		config := genericapiserver.DefaultOpenAPIV3Config(GetOpenAPIDefinitions, namer)
		models, err := builder3.BuildOpenAPIDefinitionsForResources(config, names...)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := managedfields.NewTypeConverter(models, false); err != nil {
			b.Fatal(err)
		}
	}
}
