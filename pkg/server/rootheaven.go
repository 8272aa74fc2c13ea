package server

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/heaven-dev/heaven/config/crds"
	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	heavenctrl "github.com/heaven-dev/heaven/pkg/controllers/heaven"
	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
)

// startRoot starts the root heaven, installs heaven.dev's CRDs in it and
// runs the Heaven, AutomatedMerge and SyncTarget controllers until ctx ends.
func (s *Server) startRoot(ctx context.Context) (*heavenctrl.Controller, error) {
	s.heavens.pinned[RootHeaven] = true
	if _, _, err := s.heavens.acquire(ctx, RootHeaven, false, true); err != nil {
		return nil, fmt.Errorf("starting heaven %s: %w", RootHeaven, err)
	}
	cfg := s.loopbackConfig(RootHeaven)
	if err := installCRDs(ctx, apiextensionsclient.NewForConfigOrDie(cfg)); err != nil {
		return nil, err
	}
	ctrl := heavenctrl.New(versioned.NewForConfigOrDie(cfg), heavenctrl.Branches{
		Info: s.branchInfo,
		Fork: s.fork,
		Initialize: func(ctx context.Context, name string) error {
			_, _, err := s.heavens.acquire(ctx, name, false, true)
			return err
		},
		Clone:      s.cloneRemote,
		Stop:       s.heavens.stopHeaven,
		Delete:     s.deleteBranch,
		Problems:   s.fileProblems,
		BindOwners: s.bindOwners,
	}, time.Minute)
	go ctrl.Run(ctx, 2)
	go s.startMergeController(ctx, cfg) // not in the way of serving heavens
	go s.startRemoteController(ctx, cfg)
	go s.startClusterController(ctx, cfg)
	go s.startSplitters(ctx, cfg)
	return ctrl, nil
}

// installCRDs creates or updates the CRDs of config/crds and waits until
// they are established.
func installCRDs(ctx context.Context, client apiextensionsclient.Interface) error {
	files, err := fs.Glob(crds.FS, "*.yaml")
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := crds.FS.ReadFile(f)
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		crdClient := client.ApiextensionsV1().CustomResourceDefinitions()
		existing, err := crdClient.Get(ctx, crd.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = crdClient.Create(ctx, &crd, metav1.CreateOptions{})
		case err == nil:
			crd.ResourceVersion = existing.ResourceVersion
			_, err = crdClient.Update(ctx, &crd, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
		err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := crdClient.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", crd.Name, err)
		}
		klog.FromContext(ctx).V(2).Info("Installed CRD", "crd", crd.Name)
	}
	return nil
}

func (s *Server) branchInfo(ctx context.Context, name string) (bool, string, int64, error) {
	if s.repo == nil {
		return true, "", 0, nil // etcd storage: no branches
	}
	head, rev, err := s.repo.Head(name)
	if err != nil {
		return false, "", 0, err
	}
	return !head.IsZero(), head.String(), rev, nil
}

func (s *Server) fork(ctx context.Context, name, from string, rev int64) (string, int64, error) {
	if s.repo == nil {
		return "", 0, fmt.Errorf("forks need --storage=%s", StorageGit)
	}
	// The new branch must not be open while it is created.
	_ = s.repo.CloseBranch(name)
	h, at, err := s.repo.Fork(ctx, name, from, rev)
	return h.String(), at, err
}

func (s *Server) deleteBranch(name string) error {
	if s.repo == nil {
		return nil
	}
	return s.repo.DeleteBranch(name)
}

// bindOwners makes owners cluster-admin of heaven name through its
// ClusterRoleBinding heaven:owners (deleted when there are none), starting
// the heaven if it is not running.
func (s *Server) bindOwners(ctx context.Context, name string, owners []string) error {
	if _, _, err := s.heavens.acquire(ctx, name, false, true); err != nil {
		return err
	}
	kube, err := s.loopbackKube(name)
	if err != nil {
		return err
	}
	bindings := kube.RbacV1().ClusterRoleBindings()
	if len(owners) == 0 {
		err := bindings.Delete(ctx, v1alpha1.OwnersBinding, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	want := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.OwnersBinding},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
	}
	for _, o := range owners {
		want.Subjects = append(want.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: o})
	}
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		have, err := bindings.Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = bindings.Create(ctx, want, metav1.CreateOptions{})
			return err
		case err != nil:
			return err
		}
		if have.RoleRef != want.RoleRef { // immutable: replace the binding
			if err := bindings.Delete(ctx, want.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			_, err = bindings.Create(ctx, want, metav1.CreateOptions{})
			return err
		}
		have.Subjects = want.Subjects
		_, err = bindings.Update(ctx, have, metav1.UpdateOptions{})
		return err
	})
}
