// Package resourcequota runs Kubernetes' resource quota controller
// (k8s.io/kubernetes/pkg/controller/resourcequota, as kube-controller-manager
// runs it) in a heaven, so that a ResourceQuota's status says what is used
// and the ResourceQuota admission plugin can enforce it: without a
// computed status, admission refuses every create the quota covers.
//
// The controller watches every quotable resource of its heaven. A heaven
// pays for that only once it has a ResourceQuota: Run waits for the first
// one before starting the controller.
package resourcequota

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller"
	quotacontroller "k8s.io/kubernetes/pkg/controller/resourcequota"
	quotainstall "k8s.io/kubernetes/pkg/quota/v1/install"
)

const (
	// resync is how often every quota's usage is recalculated in full, as
	// kube-controller-manager's --resource-quota-sync-period.
	resync = 5 * time.Minute
	// discoveryPeriod is how often new quotable resources (CRDs) are
	// picked up, as in kube-controller-manager.
	discoveryPeriod = 30 * time.Second
	workers         = 1
)

// Run starts the quota controller when quotas (the heaven's ResourceQuota
// informer, shared with admission) first holds one, and runs it until ctx
// ends.
func Run(ctx context.Context, kube kubernetes.Interface, meta metadata.Interface, quotas coreinformers.ResourceQuotaInformer) error {
	first := make(chan struct{})
	var once sync.Once
	reg, err := quotas.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { once.Do(func() { close(first) }) },
	})
	if err != nil {
		return err
	}
	go func() {
		defer func() { _ = quotas.Informer().RemoveEventHandler(reg) }()
		select {
		case <-ctx.Done():
			return
		case <-first:
		}
		if err := start(ctx, kube, meta, quotas); err != nil {
			klog.FromContext(ctx).Error(err, "Resource quota controller did not start")
		}
	}()
	return nil
}

func start(ctx context.Context, kube kubernetes.Interface, meta metadata.Interface, quotas coreinformers.ResourceQuotaInformer) error {
	typed := informers.NewSharedInformerFactory(kube, 0)
	metaInformers := metadatainformer.NewSharedInformerFactory(meta, 0)
	objects := informerfactory.NewInformerFactory(typed, metaInformers)
	discover := kube.Discovery().ServerPreferredNamespacedResources

	config, err := quotainstall.NewQuotaConfigurationForControllers(generic.ListerFuncForResourceFunc(typed.ForResource), typed)
	if err != nil {
		return err
	}
	started := make(chan struct{})
	c, err := quotacontroller.NewController(ctx, &quotacontroller.ControllerOptions{
		QuotaClient:               kube.CoreV1(),
		ResourceQuotaInformer:     quotas,
		ResyncPeriod:              controller.StaticResyncPeriodFunc(resync),
		Registry:                  generic.NewRegistry(config.Evaluators()),
		DiscoveryFunc:             discover,
		IgnoredResourcesFunc:      config.IgnoredResources,
		InformersStarted:          started,
		InformerFactory:           objects,
		ReplenishmentResyncPeriod: controller.StaticResyncPeriodFunc(resync),
		UpdateFilter:              quotainstall.DefaultUpdateFilter(),
	})
	if err != nil {
		return fmt.Errorf("resource quota controller: %w", err)
	}
	typed.StartWithContext(ctx)
	// metadatainformer's interface lacks StartWithContext; its informers
	// (quotas counting types without a typed informer) are rare.
	metaInformers.Start(ctx.Done())
	close(started)
	go c.Run(ctx, workers)
	go c.Sync(ctx, discover, discoveryPeriod)
	klog.FromContext(ctx).V(2).Info("Resource quota controller started")
	return nil
}
