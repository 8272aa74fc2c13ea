package objectlimit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

func TestObjectsPerHeavenAreBounded(t *testing.T) {
	held := 3
	p := New(Limit{
		Heaven: "team-a", Max: 3,
		Count:     func(context.Context) (int, error) { return held, nil },
		Exempt:    func(u user.Info) bool { return u.GetName() == "admin" },
		Ephemeral: func(gr schema.GroupResource) bool { return gr.Resource == "events" },
	})
	attrs := func(resource, subresource, who string) admission.Attributes {
		return admission.NewAttributesRecord(&corev1.ConfigMap{}, nil, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "default", "x",
			schema.GroupVersionResource{Version: "v1", Resource: resource}, subresource, admission.Create, nil, false, &user.DefaultInfo{Name: who})
	}
	assert.ErrorContains(t, p.Validate(context.Background(), attrs("configmaps", "", "alice"), nil), "heaven team-a holds 3 objects")
	assert.NoError(t, p.Validate(context.Background(), attrs("events", "", "alice"), nil), "ephemeral resources don't count")
	assert.NoError(t, p.Validate(context.Background(), attrs("serviceaccounts", "token", "alice"), nil), "subresources create nothing stored")
	assert.NoError(t, p.Validate(context.Background(), attrs("configmaps", "", "admin"), nil), "administrators are not bound")
	held = 2
	assert.NoError(t, p.Validate(context.Background(), attrs("configmaps", "", "alice"), nil), "below the bound")
}
