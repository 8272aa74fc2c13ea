package server

import (
	"os"
	"runtime/debug"

	"k8s.io/klog/v2"
)

// DefaultGCPercent is heaven-server's collector target. A running heaven
// keeps about 2 MiB of objects, allocated among some 20 MiB of garbage
// while it starts. After a collection, every page that still holds one of
// its objects stays resident, and how many do grows with how much was
// allocated since the collection before, which the target sets. The
// README's Memory paragraph has the measurements.
const DefaultGCPercent = 50

// applyGCPercent sets the collector's target to percent unless GOGC is set
// in the environment (the operator's choice wins) or percent is 0.
func applyGCPercent(logger klog.Logger, percent int) {
	if percent <= 0 {
		return
	}
	if env, ok := os.LookupEnv("GOGC"); ok {
		logger.V(2).Info("GOGC is set, --gc-percent is ignored", "GOGC", env)
		return
	}
	if old := debug.SetGCPercent(percent); old != percent {
		logger.V(2).Info("Set the collector's target", "gcPercent", percent, "was", old)
	}
}
