package conflictreport

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/merge"
)

func TestReportedConflictValuesAreTruncated(t *testing.T) {
	long := `"` + strings.Repeat("é", 300) + `"`
	c := Of("ctrl", merge.Conflict{Key: "/example.com/widgets/default/w1", Path: ".spec.text", Base: nil, Target: []byte(`"short"`), Source: []byte(long), Resolution: merge.PreferSource})
	assert.Equal(t, "example.com/widgets/default/w1", c.Object)
	assert.Nil(t, c.Base, "absent stays absent")
	assert.Equal(t, `"short"`, *c.Target)
	require.NotNil(t, c.Source)
	assert.LessOrEqual(t, len(*c.Source), v1alpha1.MaxConflictValueLength+len("…"))
	assert.True(t, strings.HasSuffix(*c.Source, "…"))
	assert.NotContains(t, *c.Source, "\uFFFD", "cut on a character boundary")
	assert.Equal(t, v1alpha1.PreferSource, c.Resolution)
}
