package controllerheaven

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
)

var everything = labels.Everything()

// ensureHeaven creates the controller's heaven as a fork of the heaven it
// works for (of the same type), with the controller as an owner; an
// existing Heaven gets the controller as an owner if it lacks it.
func (c *Controller) ensureHeaven(ctx context.Context, as versioned.Interface, ch *v1alpha1.ControllerHeaven, heaven string) error {
	heavens := as.HeavenV1alpha1().Heavens()
	owner := v1alpha1.ControllerUser(ch.Name)
	h, err := heavens.Get(ctx, heaven, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		typ := v1alpha1.HeavenTypeGeneric
		if fork, err := heavens.Get(ctx, ch.Spec.Fork, metav1.GetOptions{}); err == nil && fork.Spec.Type != "" {
			typ = fork.Spec.Type
		}
		h = &v1alpha1.Heaven{
			ObjectMeta: metav1.ObjectMeta{Name: heaven, Labels: map[string]string{v1alpha1.ControllerHeavenLabel: ch.Name}},
			Spec: v1alpha1.HeavenSpec{
				Type:   typ,
				Fork:   &v1alpha1.Fork{Heaven: ch.Spec.Fork},
				Owners: []string{owner},
			},
		}
		if _, err := heavens.Create(ctx, h, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating heaven %s: %w", heaven, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading heaven %s: %w", heaven, err)
	case slices.Contains(h.Spec.Owners, owner):
		return nil
	}
	h.Spec.Owners = append(h.Spec.Owners, owner)
	if _, err := heavens.Update(ctx, h, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("making the controller an owner of heaven %s: %w", heaven, err)
	}
	return nil
}

// merges are the two AutomatedMerges of ch: users' specs from the heaven
// it works for into its own (the source's spec wins a conflict, the
// controller's status stays), and the controller's statuses back (the
// target's spec stays, the controller's status wins), as in the README's
// workspace per controller.
func merges(ch *v1alpha1.ControllerHeaven) []*v1alpha1.AutomatedMerge {
	heaven := ch.Spec.HeavenName(ch.Name)
	policy := func(spec, status v1alpha1.ConflictResolution) v1alpha1.ConflictPolicy {
		return v1alpha1.ConflictPolicy{Default: spec, Rules: []v1alpha1.ConflictRule{
			{Path: ".spec", Resolution: spec}, {Path: ".status", Resolution: status}}}
	}
	merge := func(name, source, target string, p v1alpha1.ConflictPolicy) *v1alpha1.AutomatedMerge {
		return &v1alpha1.AutomatedMerge{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.ControllerHeavenLabel: ch.Name}},
			Spec: v1alpha1.AutomatedMergeSpec{Sources: []string{source}, Target: target,
				Resources: slices.Clone(ch.Spec.Resources), ConflictPolicy: p},
		}
	}
	return []*v1alpha1.AutomatedMerge{
		merge(v1alpha1.MergeInName(ch.Name), ch.Spec.Fork, heaven, policy(v1alpha1.PreferSource, v1alpha1.PreferTarget)),
		merge(v1alpha1.MergeOutName(ch.Name), heaven, ch.Spec.Fork, policy(v1alpha1.PreferTarget, v1alpha1.PreferSource)),
	}
}

// ensureMerge creates the AutomatedMerge, or brings its spec back to want.
func ensureMerge(ctx context.Context, as versioned.Interface, want *v1alpha1.AutomatedMerge) error {
	client := as.HeavenV1alpha1().AutomatedMerges()
	got, err := client.Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := client.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating AutomatedMerge %s: %w", want.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading AutomatedMerge %s: %w", want.Name, err)
	}
	if equality.Semantic.DeepEqual(got.Spec.Sources, want.Spec.Sources) && got.Spec.Target == want.Spec.Target &&
		equality.Semantic.DeepEqual(got.Spec.Resources, want.Spec.Resources) && equality.Semantic.DeepEqual(got.Spec.ConflictPolicy, want.Spec.ConflictPolicy) {
		return nil
	}
	got.Spec.Sources, got.Spec.Target, got.Spec.Resources, got.Spec.ConflictPolicy =
		want.Spec.Sources, want.Spec.Target, want.Spec.Resources, want.Spec.ConflictPolicy
	if _, err := client.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating AutomatedMerge %s: %w", want.Name, err)
	}
	return nil
}
