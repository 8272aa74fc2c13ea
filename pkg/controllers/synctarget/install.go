package synctarget

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/syncer/install"
)

// Reasons of the Installed condition.
const (
	ReasonInstalled         = "Installed"
	ReasonNotManaged        = "NotManaged"
	ReasonKubeconfigInvalid = "KubeconfigInvalid"
	ReasonClusterError      = "ClusterError"
	ReasonApplyFailed       = "ApplyFailed"
	ReasonUninstalling      = "Uninstalling"
)

// installRecord is the last successful install of a SyncTarget.
type installRecord struct {
	inputs   string    // hash of everything the manifests were made from
	at       time.Time // when they were applied
	rotateAt time.Time // when the credential is to be replaced
}

// install installs the syncer of st in its physical cluster, or finds it
// installed from the same inputs not long ago. It returns the Installed
// condition, how soon to install again (drift repair, credential
// rotation), and an error to retry with backoff.
func (c *Controller) install(ctx context.Context, st *v1alpha1.SyncTarget) (metav1.Condition, time.Duration, error) {
	fail := func(reason string, err error) metav1.Condition {
		return condition(st, v1alpha1.SyncTargetInstalled, metav1.ConditionFalse, reason, err.Error())
	}
	ref := st.Spec.KubeconfigSecretRef
	if ref == nil {
		c.forget(st.Name)
		return condition(st, v1alpha1.SyncTargetInstalled, metav1.ConditionUnknown, ReasonNotManaged,
			"spec.kubeconfigSecretRef is not set: the syncer is installed by hand (heaven-server syncer-manifests)"), 0, nil
	}
	// A missing or bad Secret waits for the Secret to change (its events
	// bring the target back), not for a backoff.
	kubeconfig, err := c.kubeconfigOf(ref)
	if err != nil {
		return fail(ReasonKubeconfigInvalid, err), 0, nil
	}
	resources := installableResources(st.Spec.Resources)
	inputs := c.inputsHash(st, kubeconfig, resources)
	done := condition(st, v1alpha1.SyncTargetInstalled, metav1.ConditionTrue, ReasonInstalled,
		fmt.Sprintf("the syncer is installed in namespace %s of the physical cluster (image %s)", install.Namespace(st.Name), c.opts.SyncerImage))
	now := c.opts.Now()
	if rec, ok := c.record(st.Name); ok && rec.inputs == inputs && now.Before(rec.at.Add(c.opts.Reinstall)) && now.Before(rec.rotateAt) {
		return done, soonest(rec.at.Add(c.opts.Reinstall).Sub(now), rec.rotateAt.Sub(now)), nil
	}

	cluster, err := c.deps.Connect(kubeconfig)
	if err != nil {
		return fail(ReasonKubeconfigInvalid, fmt.Errorf("kubeconfig Secret %s/%s: %w", ref.Namespace, ref.Name, err)), 0, nil
	}
	heavenKubeconfig, rotateAt, err := c.credential(ctx, cluster, st)
	if err != nil {
		return fail(ReasonClusterError, err), 0, err
	}
	m, err := install.Generate(install.Params{
		SyncTarget: st.Name, Heaven: st.Spec.Heaven, Resources: resources,
		Image: c.opts.SyncerImage, Kubeconfig: heavenKubeconfig,
	})
	if err != nil {
		return fail(ReasonApplyFailed, err), 0, err
	}
	if err := apply(ctx, cluster, m); err != nil {
		return fail(ReasonApplyFailed, err), 0, err
	}
	klog.FromContext(ctx).V(2).Info("Installed the syncer", "namespace", install.Namespace(st.Name), "credentialRotation", rotateAt)
	c.mu.Lock()
	c.installed[st.Name] = installRecord{inputs: inputs, at: now, rotateAt: rotateAt}
	c.mu.Unlock()
	return done, soonest(c.opts.Reinstall, rotateAt.Sub(now)), nil
}

// apply applies the manifests by server-side apply, in order.
func apply(ctx context.Context, cluster dynamic.Interface, m *install.Manifests) error {
	objs, err := m.Objects()
	if err != nil {
		return err
	}
	for _, o := range objs {
		client := cluster.Resource(o.Resource).Namespace(o.GetNamespace())
		if _, err := client.Apply(ctx, o.GetName(), o.Unstructured, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// installableResources are the valid entries of spec.resources; the
// syncer reports the others as NotSynced.
func installableResources(resources []string) []string {
	var out []string
	for _, r := range resources {
		if v1alpha1.ValidateResource(r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// inputsHash identifies what an install is made from: the SyncTarget's
// identity and generation, the cluster's kubeconfig, the image and how the
// syncer reaches heaven-server.
func (c *Controller) inputsHash(st *v1alpha1.SyncTarget, kubeconfig []byte, resources []string) string {
	h := sha256.New()
	for _, part := range append([]string{string(st.UID), strconv.FormatInt(st.Generation, 10), string(kubeconfig),
		c.opts.SyncerImage, c.deps.ServerURL, string(c.deps.CAPEM)}, resources...) {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c *Controller) record(name string) (installRecord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.installed[name]
	return rec, ok
}
