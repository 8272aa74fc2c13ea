package syncer

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/restclient" // client-go request metrics
	_ "k8s.io/component-base/metrics/prometheus/workqueue"  // workqueue depth, latency, retries
	"k8s.io/klog/v2"
)

// Metrics of every syncer in the process, labelled by heaven and target.
var (
	objectsSyncedMetric = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "heaven", Subsystem: "syncer", Name: "objects_synced",
		Help:           "Objects the syncer owns in the physical cluster, by resource.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"heaven", "sync_target", "resource"})
	objectsFailedMetric = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "heaven", Subsystem: "syncer", Name: "objects_failed",
		Help:           "Objects whose last sync failed and are being retried, by resource.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"heaven", "sync_target", "resource"})
	reconcilesMetric = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "heaven", Subsystem: "syncer", Name: "reconciles_total",
		Help:           "Object reconciliations, by resource and result (success, conflict or error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"heaven", "sync_target", "resource", "result"})
	writesMetric = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "heaven", Subsystem: "syncer", Name: "writes_total",
		Help:           "Writes by the syncer, by resource and kind (apply, delete downstream; status, finalizer upstream).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"heaven", "sync_target", "resource", "write"})
	reconcileDurationMetric = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "heaven", Subsystem: "syncer", Name: "reconcile_duration_seconds",
		Help:           "Time to reconcile one object, by resource.",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
		StabilityLevel: metrics.ALPHA,
	}, []string{"heaven", "sync_target", "resource"})
	heartbeatMetric = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "heaven", Subsystem: "syncer", Name: "last_heartbeat_timestamp_seconds",
		Help:           "When the syncer last wrote its heartbeat into the SyncTarget (Unix time).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"heaven", "sync_target"})
	resourceStateMetric = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "heaven", Subsystem: "syncer", Name: "resource_state",
		Help:           "1 for the state (Synced, Pending, NotSynced) of every requested resource.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"heaven", "sync_target", "resource", "state"})

	registerMetricsOnce sync.Once
)

func registerMetrics() {
	registerMetricsOnce.Do(func() {
		legacyregistry.MustRegister(objectsSyncedMetric, objectsFailedMetric, reconcilesMetric, writesMetric,
			reconcileDurationMetric, heartbeatMetric, resourceStateMetric)
	})
}

// serveMetrics serves /healthz, /livez, /readyz and /metrics on l until
// ctx ends.
func serveMetrics(ctx context.Context, l net.Listener, ready healthz.HealthChecker) error {
	mux := http.NewServeMux()
	healthz.InstallHandler(mux, healthz.PingHealthz)
	healthz.InstallLivezHandler(mux, healthz.PingHealthz)
	healthz.InstallReadyzHandler(mux, healthz.PingHealthz, ready)
	mux.Handle("/metrics", legacyregistry.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	klog.FromContext(ctx).Info("Serving /healthz, /readyz and /metrics", "address", l.Addr().String())
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
