package heavencreator

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

func heaven(createdBy string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(v1alpha1.SchemeGroupVersion.String())
	u.SetKind("Heaven")
	u.SetName("h")
	if createdBy != "" {
		u.SetAnnotations(map[string]string{v1alpha1.CreatedByAnnotation: createdBy, "other": "kept"})
	}
	return u
}

func TestCreatorIsRecordedAndKept(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice"}
	for _, tc := range []struct {
		name        string
		op          admission.Operation
		obj, old    *unstructured.Unstructured
		subresource string
		want        string
	}{
		{name: "create sets the requester", op: admission.Create, obj: heaven(""), want: "alice"},
		{name: "create ignores a claimed creator", op: admission.Create, obj: heaven("mallory"), want: "alice"},
		{name: "update keeps the creator", op: admission.Update, obj: heaven("mallory"), old: heaven("bob"), want: "bob"},
		{name: "update cannot remove it", op: admission.Update, obj: heaven(""), old: heaven("bob"), want: "bob"},
		{name: "update of a heaven without one adds none", op: admission.Update, obj: heaven("mallory"), old: heaven(""), want: ""},
		{name: "status is not touched", op: admission.Update, obj: heaven("mallory"), old: heaven("bob"), subresource: "status", want: "mallory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var old runtime.Object
			if tc.old != nil {
				old = tc.old
			}
			a := admission.NewAttributesRecord(tc.obj, old, v1alpha1.SchemeGroupVersion.WithKind("Heaven"), "", "h",
				v1alpha1.HeavensResource, tc.subresource, tc.op, nil, false, alice)
			require.NoError(t, New(Limit{}).Admit(context.Background(), a, nil))
			assert.Equal(t, tc.want, tc.obj.GetAnnotations()[v1alpha1.CreatedByAnnotation])
		})
	}
}

func TestHeavensPerUserAreBounded(t *testing.T) {
	created := map[string]int{"alice": 2, "bob": 1}
	p := New(Limit{Max: 2, Count: func(u string) int { return created[u] }, Exempt: func(u user.Info) bool { return u.GetName() == "root" }})
	for _, tc := range []struct {
		user string
		op   admission.Operation
		ok   bool
	}{
		{"alice", admission.Create, false},
		{"alice", admission.Update, true},
		{"bob", admission.Create, true},
		{"root", admission.Create, true},
	} {
		a := admission.NewAttributesRecord(heaven(""), heaven(""), v1alpha1.SchemeGroupVersion.WithKind("Heaven"), "", "h",
			v1alpha1.HeavensResource, "", tc.op, nil, false, &user.DefaultInfo{Name: tc.user})
		err := p.Validate(context.Background(), a, nil)
		if tc.ok {
			assert.NoError(t, err, tc.user)
		} else {
			assert.ErrorContains(t, err, "has created 2 heavens", tc.user)
		}
	}
}
