package server

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
)

// Every heaven has a Heaven object in root, so that `kubectl get heavens`
// lists them all: heaven-server creates one for a heaven started on first
// use, and at start for every branch of the repository that is a heaven's
// (made by a git push, or before Heaven objects existed). root holds them
// and has none of its own.

// adoptionTimeout bounds one adoption.
const adoptionTimeout = time.Minute

// adopt creates heaven name's Heaven object if there is none, once root
// serves them. It runs in the background; a failure is logged and the next
// start tries again.
func (s *Server) adopt(name string) {
	if name == RootHeaven {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), adoptionTimeout)
	defer cancel()
	select {
	case <-s.rootReady:
	case <-ctx.Done():
		return
	}
	exists, err := s.heavenCtrl.Load().Exists(ctx, name)
	if err == nil && !exists {
		var root versioned.Interface
		if root, err = s.loopbackHeaven(RootHeaven); err == nil {
			err = createHeavenObject(ctx, root, name)
		}
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Could not create the Heaven object of a heaven", "heaven", name)
	}
}

// adoptBranches creates the Heaven objects of the repository's branches
// that are heavens without one, when heavens are created on first use
// (otherwise only declared heavens are served, and a branch someone pushed
// stays a branch).
func (s *Server) adoptBranches(ctx context.Context) {
	if s.repo == nil || !s.cfg.AutoCreateHeavens {
		return
	}
	branches, err := s.repo.Git().Branches()
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing the repository's branches to adopt them")
		return
	}
	for _, b := range branches {
		if b != RootHeaven && ValidateHeavenName(b) == nil {
			s.adopt(b)
		}
	}
}

func createHeavenObject(ctx context.Context, client versioned.Interface, name string) error {
	h := &v1alpha1.Heaven{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := client.HeavenV1alpha1().Heavens().Create(ctx, h, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
