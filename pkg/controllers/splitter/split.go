// Package splitter is the Deployment splitter of kcp's demo: a Deployment
// of a heaven labelled heaven.dev/split is split into one Deployment per
// SyncTarget, each labelled for its target (so its syncer copies it to its
// cluster) with a share of the replicas, and the children's status, which
// the syncers bring back up, is summed into the parent's.
package splitter

import (
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

const (
	// SplitLabel on a Deployment asks for it to be split (any value).
	SplitLabel = "heaven.dev/split"
	// TargetsAnnotation names the SyncTargets to split over, separated by
	// commas; without it, every SyncTarget of the heaven.
	TargetsAnnotation = "heaven.dev/split-targets"
	// ParentLabel on a child names the Deployment it was split from.
	ParentLabel = "heaven.dev/split-of"
	// Finalizer keeps a split Deployment until its children are deleted
	// (a heaven runs no garbage collector).
	Finalizer = "heaven.dev/splitter"
)

// shares divides replicas among n targets as evenly as possible, the
// first targets taking the remainder: 5 over 2 is 3 and 2.
func shares(replicas int32, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = replicas / int32(n)
		if int32(i) < replicas%int32(n) {
			out[i]++
		}
	}
	return out
}

// targetsOf returns the SyncTargets a parent is split over, sorted: its
// annotation's, or all of the heaven's.
func targetsOf(parent *appsv1.Deployment, all []string) []string {
	var out []string
	if list, ok := parent.Annotations[TargetsAnnotation]; ok {
		for _, t := range strings.Split(list, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
	} else {
		out = append(out, all...)
	}
	sort.Strings(out)
	return dedupe(out)
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// childName is the name of parent's child for target.
func childName(parent, target string) string { return parent + "-" + target }

// children builds the Deployments parent is split into, one per target.
func children(parent *appsv1.Deployment, targets []string) []*appsv1.Deployment {
	replicas := ptr.Deref(parent.Spec.Replicas, 1)
	share := shares(replicas, len(targets))
	out := make([]*appsv1.Deployment, len(targets))
	for i, t := range targets {
		labels := map[string]string{}
		for k, v := range parent.Labels {
			if k != SplitLabel {
				labels[k] = v
			}
		}
		labels[v1alpha1.ClusterLabel] = t
		labels[ParentLabel] = parent.Name
		spec := *parent.Spec.DeepCopy()
		spec.Replicas = ptr.To(share[i])
		out[i] = &appsv1.Deployment{
			TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{
				Name:      childName(parent.Name, t),
				Namespace: parent.Namespace,
				Labels:    labels,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "apps/v1", Kind: "Deployment", Name: parent.Name, UID: parent.UID,
					Controller: ptr.To(true),
				}},
			},
			Spec: spec,
		}
	}
	return out
}

// aggregate is the parent's status summed from its children's. The parent
// has observed its generation once every child observed its own.
func aggregate(parent *appsv1.Deployment, kids []*appsv1.Deployment) appsv1.DeploymentStatus {
	var st appsv1.DeploymentStatus
	observed := true
	for _, c := range kids {
		st.Replicas += c.Status.Replicas
		st.UpdatedReplicas += c.Status.UpdatedReplicas
		st.ReadyReplicas += c.Status.ReadyReplicas
		st.AvailableReplicas += c.Status.AvailableReplicas
		st.UnavailableReplicas += c.Status.UnavailableReplicas
		if c.Status.ObservedGeneration < c.Generation {
			observed = false
		}
	}
	if observed {
		st.ObservedGeneration = parent.Generation
	} else {
		st.ObservedGeneration = parent.Status.ObservedGeneration
	}
	return st
}
