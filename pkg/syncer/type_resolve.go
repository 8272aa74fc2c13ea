package syncer

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// discoverySnapshot is one side's discovery, read once per type
// reconciliation: the groups with their preferred versions, and resource
// lists fetched as needed.
type discoverySnapshot struct {
	client    *discovery.DiscoveryClient
	preferred map[string]string
	served    map[schema.GroupVersion]bool
	resources map[schema.GroupVersion]*metav1.APIResourceList
}

func newDiscoverySnapshot(ctx context.Context, client *discovery.DiscoveryClient) (*discoverySnapshot, error) {
	groups, err := client.ServerGroupsWithContext(ctx)
	if err != nil {
		return nil, err
	}
	d := &discoverySnapshot{client: client, preferred: map[string]string{}, served: map[schema.GroupVersion]bool{},
		resources: map[schema.GroupVersion]*metav1.APIResourceList{}}
	for _, g := range groups.Groups {
		d.preferred[g.Name] = g.PreferredVersion.Version
		for _, v := range g.Versions {
			d.served[schema.GroupVersion{Group: g.Name, Version: v.Version}] = true
		}
	}
	return d, nil
}

// resource is the resource name of gv, nil if it is not served, and
// whether it has a status subresource.
func (d *discoverySnapshot) resource(ctx context.Context, gv schema.GroupVersion, name string) (*metav1.APIResource, bool, error) {
	if !d.served[gv] {
		return nil, false, nil
	}
	list, ok := d.resources[gv]
	if !ok {
		var err error
		list, err = d.client.ServerResourcesForGroupVersionWithContext(ctx, gv.String())
		if apierrors.IsNotFound(err) {
			list, err = &metav1.APIResourceList{}, nil
		}
		if err != nil {
			return nil, false, err
		}
		d.resources[gv] = list
	}
	var found *metav1.APIResource
	hasStatus := false
	for i := range list.APIResources {
		switch r := &list.APIResources[i]; r.Name {
		case name:
			found = r
		case name + "/status":
			hasStatus = true
		}
	}
	return found, hasStatus && found != nil, nil
}

// neededVerbs are what the syncer does to objects in the cluster.
var neededVerbs = []string{"get", "list", "watch", "patch", "delete"}

// resolveType decides how resource gr is synced: with the heaven's own
// type when it serves the cluster's preferred version, else by teaching it
// the type as a CRD (the cluster's CRD copied, or one built from the
// cluster's OpenAPI for a built-in type in a dotted group). It returns the
// type when objects can be synced now, and the resource's state.
func (s *Syncer) resolveType(ctx context.Context, gr schema.GroupResource, down, up *discoverySnapshot) (*typeInfo, v1alpha1.ResourceSyncStatus) {
	st := v1alpha1.ResourceSyncStatus{Resource: gr.String()}
	notSynced := func(reason, format string, args ...any) (*typeInfo, v1alpha1.ResourceSyncStatus) {
		st.State, st.Reason, st.Message = v1alpha1.ResourceNotSynced, reason, fmt.Sprintf(format, args...)
		return nil, st
	}
	version, ok := down.preferred[gr.Group]
	if !ok {
		return notSynced("NotInCluster", "the physical cluster does not serve group %q", gr.Group)
	}
	gv := schema.GroupVersion{Group: gr.Group, Version: version}
	dr, downStatus, err := down.resource(ctx, gv, gr.Resource)
	if err != nil {
		return notSynced("DiscoveryFailed", "discovering %s in the physical cluster: %v", gv, err)
	}
	if dr == nil {
		return notSynced("NotInCluster", "the physical cluster does not serve %s in %s", gr.Resource, gv)
	}
	st.Version, st.Kind = version, dr.Kind
	if !dr.Namespaced {
		return notSynced("ClusterScoped", "cluster-scoped resources are not synced: their names would collide across heavens")
	}
	if missing := sets.New(neededVerbs...).Difference(sets.New(dr.Verbs...)); missing.Len() > 0 {
		return notSynced("UnsupportedVerbs", "the physical cluster does not allow %v on %s", sets.List(missing), gr)
	}

	ur, upStatus, err := up.resource(ctx, gv, gr.Resource)
	if err != nil {
		return notSynced("DiscoveryFailed", "discovering %s in the heaven: %v", gv, err)
	}
	if ur != nil {
		if !ur.Namespaced {
			return notSynced("ScopeMismatch", "the heaven serves %s cluster-scoped", gr)
		}
		if ur.Kind != dr.Kind {
			return notSynced("KindMismatch", "the heaven serves %s as kind %s, the physical cluster as %s", gr, ur.Kind, dr.Kind)
		}
		st.State, st.Source = v1alpha1.ResourceSynced, s.refreshOwnedCRD(ctx, gr, dr, downStatus, gv)
		return &typeInfo{gvr: gv.WithResource(gr.Resource), kind: dr.Kind, hasStatus: upStatus, source: st.Source}, st
	}

	if !strings.Contains(gr.Group, ".") {
		return notSynced("NotServedByHeaven", "the heaven does not serve %s in %s, and a CRD cannot define it (CRD groups contain a dot)", gr.Resource, gv)
	}
	if native, err := s.servedNatively(ctx, up, gr.Group); err != nil {
		return notSynced("DiscoveryFailed", "listing the heaven's CRDs: %v", err)
	} else if native {
		return notSynced("GroupServedNatively", "the heaven serves group %s itself without %s; a CRD cannot add to it", gr.Group, gr.Resource)
	}
	crd, source, err := s.desiredCRD(ctx, gr, dr, downStatus, gv)
	if err != nil {
		return notSynced("SchemaUnavailable", "building a CRD for %s: %v", gr, err)
	}
	st.Source = source
	if err := s.upsertCRD(ctx, crd); err != nil {
		return notSynced("CRDRejected", "CRD %s in the heaven: %v", crd.Name, err)
	}
	st.State, st.Reason = v1alpha1.ResourcePending, "WaitingForCRD"
	st.Message = fmt.Sprintf("CRD %s (from the physical cluster's %s) is in the heaven; waiting until it serves %s", crd.Name, source, gv)
	return nil, st
}

// servedNatively reports whether the heaven serves group without any CRD.
func (s *Syncer) servedNatively(ctx context.Context, up *discoverySnapshot, group string) (bool, error) {
	if _, ok := up.preferred[group]; !ok {
		return false, nil
	}
	crds, err := s.up.crds.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	for _, crd := range crds.Items {
		if crd.Spec.Group == group {
			return false, nil
		}
	}
	return true, nil
}

// refreshOwnedCRD returns where the heaven's definition of gr comes from,
// and brings a CRD the syncer created up to date with the cluster's type:
// a copied CRD on every type reconciliation (a cheap GET), one built from
// OpenAPI once per run of the syncer (the document is large and built-in
// types only change when the cluster is upgraded).
func (s *Syncer) refreshOwnedCRD(ctx context.Context, gr schema.GroupResource, dr *metav1.APIResource, hasStatus bool, gv schema.GroupVersion) v1alpha1.TypeSource {
	if !strings.Contains(gr.Group, ".") {
		return v1alpha1.TypeSourceHeaven
	}
	existing, err := s.up.crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName(gr), metav1.GetOptions{})
	if err != nil || !s.ownsCRD(existing) {
		return v1alpha1.TypeSourceHeaven
	}
	source := v1alpha1.TypeSource(existing.Annotations[CRDSourceAnnotation])
	if source == v1alpha1.TypeSourceOpenAPI && s.openAPIRefreshed[gr] {
		return source
	}
	crd, _, err := s.desiredCRD(ctx, gr, dr, hasStatus, gv)
	if err == nil {
		err = s.upsertCRD(ctx, crd)
	}
	if err != nil {
		klog.FromContext(ctx).Info("Updating the heaven's CRD from the physical cluster failed, will retry", "crd", crdName(gr), "err", err)
		return source
	}
	if source == v1alpha1.TypeSourceOpenAPI {
		s.openAPIRefreshed[gr] = true
	}
	return source
}

func crdName(gr schema.GroupResource) string { return gr.Resource + "." + gr.Group }

// desiredCRD is the CRD that teaches the heaven gr: the cluster's CRD if
// it has one, else one built from the cluster's OpenAPI v3 schema.
func (s *Syncer) desiredCRD(ctx context.Context, gr schema.GroupResource, dr *metav1.APIResource, hasStatus bool, gv schema.GroupVersion) (*apiextensionsv1.CustomResourceDefinition, v1alpha1.TypeSource, error) {
	dcrd, err := s.down.crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName(gr), metav1.GetOptions{})
	switch {
	case err == nil:
		return s.copiedCRD(dcrd), v1alpha1.TypeSourceCRD, nil
	case !apierrors.IsNotFound(err):
		return nil, "", err
	}
	doc, err := s.down.discovery.RESTClient().Get().AbsPath("/openapi/v3/apis", gv.Group, gv.Version).Do(ctx).Raw()
	if err != nil {
		return nil, "", fmt.Errorf("reading the physical cluster's OpenAPI v3 of %s: %w", gv, err)
	}
	props, err := schemaFromOpenAPI(doc, gv.WithKind(dr.Kind))
	if err != nil {
		return nil, "", err
	}
	singular := dr.SingularName
	if singular == "" {
		singular = strings.ToLower(dr.Kind)
	}
	version := apiextensionsv1.CustomResourceDefinitionVersion{
		Name: gv.Version, Served: true, Storage: true,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: props},
	}
	if hasStatus {
		version.Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: crdName(gr)},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gr.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: gr.Resource, Singular: singular, Kind: dr.Kind, ListKind: dr.Kind + "List",
				ShortNames: dr.ShortNames, Categories: dr.Categories,
			},
			Scope:    apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version},
		},
	}
	s.markCRD(crd, v1alpha1.TypeSourceOpenAPI)
	return crd, v1alpha1.TypeSourceOpenAPI, nil
}

// copiedCRD is the heaven's copy of the cluster's CRD: the same spec,
// without conversion webhooks (the heaven cannot reach them).
func (s *Syncer) copiedCRD(dcrd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: dcrd.Name},
		Spec:       *dcrd.Spec.DeepCopy(),
	}
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	if v, ok := dcrd.Annotations[apiApprovedAnnotation]; ok {
		crd.Annotations = map[string]string{apiApprovedAnnotation: v}
	}
	s.markCRD(crd, v1alpha1.TypeSourceCRD)
	return crd
}

// apiApprovedAnnotation is required on CRDs in *.k8s.io and
// *.kubernetes.io groups.
const apiApprovedAnnotation = "api-approved.kubernetes.io"

// markCRD labels a CRD as this syncer's, with the hash of its spec.
func (s *Syncer) markCRD(crd *apiextensionsv1.CustomResourceDefinition, source v1alpha1.TypeSource) {
	if crd.Annotations == nil {
		crd.Annotations = map[string]string{}
	}
	crd.Labels = map[string]string{SyncTargetLabel: s.id.target}
	crd.Annotations[CRDSourceAnnotation] = string(source)
	crd.Annotations[CRDHashAnnotation] = hashJSON(crd.Spec)
	g := crd.Spec.Group
	if _, ok := crd.Annotations[apiApprovedAnnotation]; !ok && (g == "k8s.io" || g == "kubernetes.io" ||
		strings.HasSuffix(g, ".k8s.io") || strings.HasSuffix(g, ".kubernetes.io")) {
		crd.Annotations[apiApprovedAnnotation] = "unapproved, copied by heaven's syncer from a physical cluster"
	}
}

func (s *Syncer) ownsCRD(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return crd.Labels[SyncTargetLabel] == s.id.target && crd.Annotations[CRDSourceAnnotation] != ""
}

// upsertCRD creates the CRD in the heaven, or updates one the syncer
// created when its spec changed. Someone else's CRD is left alone.
func (s *Syncer) upsertCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	client := s.up.crds.ApiextensionsV1().CustomResourceDefinitions()
	existing, err := client.Get(ctx, crd.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = client.Create(ctx, crd, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	case !s.ownsCRD(existing):
		return fmt.Errorf("a CRD of that name exists and was not created by this syncer")
	case existing.Annotations[CRDHashAnnotation] == crd.Annotations[CRDHashAnnotation]:
		return nil
	}
	existing.Spec = crd.Spec
	for k, v := range crd.Annotations {
		existing.Annotations[k] = v
	}
	_, err = client.Update(ctx, existing, metav1.UpdateOptions{})
	return err
}
