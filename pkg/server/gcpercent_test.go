package server

import (
	"os"
	"runtime/debug"
	"testing"

	"k8s.io/klog/v2"
)

func TestApplyGCPercent(t *testing.T) {
	const before = 100
	for _, tc := range []struct {
		name    string
		gogc    string // "" leaves GOGC unset
		percent int
		want    int
	}{
		{name: "sets the target", percent: 50, want: 50},
		{name: "0 leaves it", percent: 0, want: before},
		{name: "GOGC wins", gogc: "200", percent: 50, want: before},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.gogc != "" {
				t.Setenv("GOGC", tc.gogc)
			} else if env, ok := os.LookupEnv("GOGC"); ok {
				t.Setenv("GOGC", env) // restored after the test
				os.Unsetenv("GOGC")
			}
			old := debug.SetGCPercent(before)
			defer debug.SetGCPercent(old)

			applyGCPercent(klog.Background(), tc.percent)
			if got := debug.SetGCPercent(before); got != tc.want {
				t.Errorf("collector target = %d, want %d", got, tc.want)
			}
		})
	}
}
