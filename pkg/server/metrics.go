package server

import (
	"sync"

	compmetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// metrics are heaven-server's own Prometheus metrics, served at the root
// /metrics with those of k8s.io/apiserver (which has no heaven label: every
// heaven's API server shares the process-wide registry).
type metrics struct {
	requests        *compmetrics.CounterVec
	requestLatency  *compmetrics.HistogramVec
	activeHeavens   *compmetrics.Gauge
	heavenStarts    *compmetrics.Counter
	startLatency    *compmetrics.Histogram
	gitCommits      *compmetrics.Counter
	gitCommitWrites *compmetrics.Counter
	gitCommitTime   *compmetrics.Histogram
	unservedFiles   *compmetrics.GaugeVec
	requestsWaited  *compmetrics.CounterVec
	requestsRefused *compmetrics.CounterVec
}

var (
	registerOnce sync.Once
	theMetrics   *metrics
)

// serverMetrics returns the process's metrics, registered once.
func serverMetrics() *metrics {
	registerOnce.Do(func() {
		m := &metrics{
			requests: compmetrics.NewCounterVec(&compmetrics.CounterOpts{
				Namespace: "heaven", Name: "requests_total",
				Help:           "Requests served by heaven-server, by heaven, verb and HTTP code.",
				StabilityLevel: compmetrics.ALPHA,
			}, []string{"heaven", "verb", "code"}),
			requestLatency: compmetrics.NewHistogramVec(&compmetrics.HistogramOpts{
				Namespace: "heaven", Name: "request_duration_seconds",
				Help:           "Latency of requests other than watches, by heaven and verb.",
				Buckets:        []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 60},
				StabilityLevel: compmetrics.ALPHA,
			}, []string{"heaven", "verb"}),
			activeHeavens: compmetrics.NewGauge(&compmetrics.GaugeOpts{
				Namespace: "heaven", Name: "active_heavens",
				Help:           "Heavens whose API server is running.",
				StabilityLevel: compmetrics.ALPHA,
			}),
			heavenStarts: compmetrics.NewCounter(&compmetrics.CounterOpts{
				Namespace: "heaven", Name: "heaven_starts_total",
				Help:           "Heaven API servers started (first use or after idle eviction).",
				StabilityLevel: compmetrics.ALPHA,
			}),
			startLatency: compmetrics.NewHistogram(&compmetrics.HistogramOpts{
				Namespace: "heaven", Name: "heaven_start_duration_seconds",
				Help:           "Time from a heaven's first request to it serving every request.",
				Buckets:        []float64{.025, .05, .1, .15, .25, .5, 1, 2.5, 5},
				StabilityLevel: compmetrics.ALPHA,
			}),
			gitCommits: compmetrics.NewCounter(&compmetrics.CounterOpts{
				Namespace: "heaven", Name: "git_commits_total",
				Help:           "Commits the git store made (a group commit counts once).",
				StabilityLevel: compmetrics.ALPHA,
			}),
			gitCommitWrites: compmetrics.NewCounter(&compmetrics.CounterOpts{
				Namespace: "heaven", Name: "git_commit_writes_total",
				Help:           "Write requests the git store committed (each keeps its own revision).",
				StabilityLevel: compmetrics.ALPHA,
			}),
			gitCommitTime: compmetrics.NewHistogram(&compmetrics.HistogramOpts{
				Namespace: "heaven", Name: "git_commit_duration_seconds",
				Help:           "Time to make a commit durable and move the branch.",
				Buckets:        []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
				StabilityLevel: compmetrics.ALPHA,
			}),
			unservedFiles: compmetrics.NewGaugeVec(&compmetrics.GaugeOpts{
				Namespace: "heaven", Name: "unserved_files",
				Help:           "Files of a heaven's branch that are not served (committed from outside and not readable as objects), while the branch is open.",
				StabilityLevel: compmetrics.ALPHA,
			}, []string{"heaven"}),
			requestsWaited: compmetrics.NewCounterVec(&compmetrics.CounterOpts{
				Namespace: "heaven", Name: "requests_waited_total",
				Help:           "Requests that waited for a request slot (--max-requests-inflight*), by heaven.",
				StabilityLevel: compmetrics.ALPHA,
			}, []string{"heaven"}),
			requestsRefused: compmetrics.NewCounterVec(&compmetrics.CounterOpts{
				Namespace: "heaven", Name: "requests_refused_total",
				Help:           "Requests refused with 429 because too many of their heaven waited, by heaven.",
				StabilityLevel: compmetrics.ALPHA,
			}, []string{"heaven"}),
		}
		legacyregistry.MustRegister(m.requests, m.requestLatency, m.activeHeavens, m.heavenStarts,
			m.startLatency, m.gitCommits, m.gitCommitWrites, m.gitCommitTime, m.unservedFiles,
			m.requestsWaited, m.requestsRefused)
		theMetrics = m
	})
	return theMetrics
}
