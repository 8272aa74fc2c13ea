package intern

import (
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	"k8s.io/apiserver/pkg/cel/environment"
)

// webhookConditions is the compiler of webhooks' matchConditions, as
// generic.NewWebhook builds it for every plugin: a CEL environment for each
// combination of optional variables, about 0.4 MiB, and nothing in them
// depends on the server.
var webhookConditions = sync.OnceValue(func() cel.ConditionCompiler {
	return cel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
})

// Webhooks is an admission plugin initializer that gives the validating and
// mutating webhook plugins the one shared compiler of match conditions.
// Pass it to the admission options with the other initializers.
type Webhooks struct {
	// Err, if set, is told when a plugin keeps its own compiler.
	Err func(error)
}

var _ admission.PluginInitializer = Webhooks{}

func (w Webhooks) Initialize(plugin admission.Interface) {
	var hook *generic.Webhook
	switch p := plugin.(type) {
	case *validating.Plugin:
		hook = p.Webhook
	case *mutating.Plugin:
		hook = p.Webhook
	default:
		return
	}
	if err := shareConditions(hook); err != nil && w.Err != nil {
		w.Err(err)
	}
}

func shareConditions(hook *generic.Webhook) error {
	if hook == nil {
		return nil
	}
	f, err := field(reflect.ValueOf(hook).Elem(), "filterCompiler")
	if err != nil {
		return err
	}
	shared := reflect.ValueOf(webhookConditions())
	if f.Type() != reflect.TypeFor[cel.ConditionCompiler]() {
		return fmt.Errorf("generic.Webhook.filterCompiler is a %s, not a cel.ConditionCompiler", f.Type())
	}
	if !f.IsNil() && f.Elem().Type() != shared.Type() {
		return fmt.Errorf("generic.Webhook.filterCompiler holds a %s, not a %s", f.Elem().Type(), shared.Type())
	}
	f.Set(shared)
	return nil
}
