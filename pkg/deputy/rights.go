// Package deputy keeps heaven-server's controllers from being confused
// deputies. A Heaven that forks another or tracks a git remote, an
// AutomatedMerge and a SyncTarget make heaven-server read and write
// heavens on someone's behalf. Whoever creates or changes one must hold,
// in every heaven involved, the rights the object will exercise there
// (Rights); the admission plugin of the root heaven checks them against
// each heaven's own authorizer and records who asked (the requester), and
// the merge controller checks the requester's rights again before every
// merge, so that a revoked right stops the flow.
package deputy

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// Right is a permission in a heaven, on all namespaces: Verb on Resource
// of Group ("*" for every resource, every group).
type Right struct {
	Heaven, Verb, Group, Resource string
}

func (r Right) String() string {
	what := r.Resource
	switch {
	case r.Group == "*" && r.Resource == "*":
		what = "every resource"
	case r.Group != "":
		what = r.Resource + "." + r.Group
	}
	return fmt.Sprintf("%s %s in heaven %s", r.Verb, what, r.Heaven)
}

// Attributes is the authorization request for the right, made by u.
func (r Right) Attributes(u user.Info) authorizer.Attributes {
	return authorizer.AttributesRecord{User: u, Verb: r.Verb, APIGroup: r.Group, Resource: r.Resource, ResourceRequest: true}
}

// everything is each verb on every resource of heaven.
func everything(heaven string, verbs ...string) []Right {
	var out []Right
	for _, v := range verbs {
		out = append(out, Right{Heaven: heaven, Verb: v, Group: "*", Resource: "*"})
	}
	return out
}

var (
	readVerbs  = []string{"get", "list"}
	writeVerbs = []string{"create", "update", "patch", "delete"}
)

// HeavenRights are the rights a Heaven exercises besides in itself (which
// its creator owns, see OwnsNewHeaven): a fork copies everything of its
// source.
func HeavenRights(h *v1alpha1.Heaven) []Right {
	if h.Spec.Fork == nil {
		return nil
	}
	return everything(h.Spec.Fork.Heaven, readVerbs...)
}

// RemoteRights are what a Heaven's git remote exercises in the heaven:
// everything in it leaves (pushed) and the remote's changes are merged in.
func RemoteRights(h *v1alpha1.Heaven) []Right {
	if h.Spec.Remote == nil {
		return nil
	}
	return everything(h.Name, slices.Concat(readVerbs, writeVerbs)...)
}

// MergeRights are what an AutomatedMerge exercises: reading its resources
// in each source, writing them in the target.
func MergeRights(am *v1alpha1.AutomatedMerge) []Right {
	var out []Right
	for _, src := range am.Spec.Sources {
		out = append(out, MergeSourceRights(am, src)...)
	}
	return append(out, MergeTargetRights(am)...)
}

// MergeSourceRights are what merging source src reads.
func MergeSourceRights(am *v1alpha1.AutomatedMerge, src string) []Right {
	return resourceRights(src, am.Spec.Resources, readVerbs)
}

// MergeTargetRights are what merging into the target writes.
func MergeTargetRights(am *v1alpha1.AutomatedMerge) []Right {
	return resourceRights(am.Spec.Target, am.Spec.Resources, writeVerbs)
}

// resourceRights are verbs on resources ("<group or core>/<resource>";
// none: every resource) in heaven.
func resourceRights(heaven string, resources []string, verbs []string) []Right {
	if len(resources) == 0 {
		return everything(heaven, verbs...)
	}
	var out []Right
	for _, r := range resources {
		group, resource, _ := strings.Cut(r, "/")
		if group == "core" {
			group = ""
		}
		for _, v := range verbs {
			out = append(out, Right{Heaven: heaven, Verb: v, Group: group, Resource: resource})
		}
	}
	return out
}

// SyncTargetRights are what a SyncTarget exercises: its heaven's objects
// leave for the cluster, their status comes back.
func SyncTargetRights(st *v1alpha1.SyncTarget) []Right {
	return everything(st.Spec.Heaven, "get", "list", "watch", "update", "patch")
}

// ControllerHeavenRights are what a ControllerHeaven exercises: forking
// the heaven it works for, merging both ways, and running a Deployment in
// the cluster of a SyncTarget with the target's credentials, which is for
// who may change SyncTargets. The heaven and the merges are then created
// as the requester, and checked again as such.
func ControllerHeavenRights(ch *v1alpha1.ControllerHeaven) []Right {
	heaven := ch.Spec.HeavenName(ch.Name)
	rights := everything(ch.Spec.Fork, readVerbs...)
	rights = append(rights, resourceRights(ch.Spec.Fork, ch.Spec.Resources, writeVerbs)...)
	rights = append(rights, resourceRights(heaven, ch.Spec.Resources, slices.Concat(readVerbs, writeVerbs))...)
	return append(rights, Right{Heaven: v1alpha1.RootHeaven, Verb: "update", Group: v1alpha1.GroupName, Resource: v1alpha1.SyncTargetsResource.Resource})
}
