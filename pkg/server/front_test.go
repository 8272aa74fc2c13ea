package server

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestValidateHeavenName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"root", true},
		{"team-a", true},
		{"a", true},
		{"0abc9", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{"", false},
		{"Team-A", false},
		{"-a", false},
		{"a-", false},
		{"a.b", false},
		{"a..b", false},
		{"a_b", false},
		{"x.lock", false},
		{"refs/heads/main", false},
		{"a%2Fb", false},
	} {
		err := ValidateHeavenName(tc.name)
		assert.Equal(t, tc.ok, err == nil, "%q: %v", tc.name, err)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Options)
		errs   int
	}{
		{"defaults", func(*Options) {}, 0},
		{"bad bind address", func(o *Options) { o.BindAddress = "localhost" }, 1},
		{"bad port", func(o *Options) { o.SecurePort = 70000 }, 1},
		{"bad storage", func(o *Options) { o.Storage = "s3" }, 1},
		{"no idle timeout", func(o *Options) { o.IdleTimeout = 0 }, 1},
		{"negative compaction", func(o *Options) { o.CompactionInterval = -time.Second }, 1},
		{"empty resource", func(o *Options) { o.EphemeralResources = []string{".apps"} }, 1},
		{"everything wrong", func(o *Options) { o.DataDir, o.Storage, o.SecurePort = "", "x", -1 }, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.change(o)
			assert.Len(t, o.Validate(), tc.errs)
		})
	}
}
