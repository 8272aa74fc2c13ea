package scheme

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
)

// addIdentityConversions lets Scheme.Convert copy a type onto itself, which is
// how the apiserver moves an object between a version and its internal form.
func addIdentityConversions(s *runtime.Scheme, types []runtime.Object) error {
	for _, t := range types {
		if err := s.AddConversionFunc(t, t, identity); err != nil {
			return err
		}
	}
	return nil
}

func identity(in, out interface{}, _ conversion.Scope) error {
	obj, ok := in.(runtime.Object)
	if !ok {
		return fmt.Errorf("identity conversion of %T: not a runtime.Object", in)
	}
	dst := reflect.ValueOf(out)
	src := reflect.ValueOf(obj.DeepCopyObject())
	if dst.Type() != src.Type() {
		return fmt.Errorf("identity conversion from %T to %T", in, out)
	}
	dst.Elem().Set(src.Elem())
	return nil
}
