// Package objectlimit is the admission plugin that bounds how many objects
// one heaven holds, so that no tenant can fill heaven-server's memory (a
// heaven's index and current values are in memory while it runs). Server
// administrators and heaven-server itself are not bound; ephemeral
// resources (in etcd, not in the heaven's branch) are not counted.
package objectlimit

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// PluginName is the plugin's name in the admission chain.
const PluginName = "HeavenObjectLimit"

// Limit is the bound of one heaven.
type Limit struct {
	Heaven string
	// Max objects (0: no bound), of which the heaven holds Count().
	Max   int
	Count func(ctx context.Context) (int, error)
	// Exempt says who is not bound; Ephemeral which resources don't count.
	Exempt    func(user.Info) bool
	Ephemeral func(schema.GroupResource) bool
}

// Plugin refuses creations beyond the bound.
type Plugin struct {
	*admission.Handler
	limit Limit
}

var _ admission.ValidationInterface = &Plugin{}

// New returns the plugin.
func New(limit Limit) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create), limit: limit}
}

// Validate refuses a new object once the heaven holds Max.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if p.limit.Max <= 0 || a.GetSubresource() != "" {
		return nil
	}
	if p.limit.Ephemeral != nil && p.limit.Ephemeral(a.GetResource().GroupResource()) {
		return nil
	}
	if u := a.GetUserInfo(); u == nil || (p.limit.Exempt != nil && p.limit.Exempt(u)) {
		return nil
	}
	n, err := p.limit.Count(ctx)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("counting the objects of heaven %s: %w", p.limit.Heaven, err))
	}
	if n >= p.limit.Max {
		return admission.NewForbidden(a, fmt.Errorf("heaven %s holds %d objects, the most a heaven may (--max-objects-per-heaven); "+
			"deleted objects count until the next compaction", p.limit.Heaven, n))
	}
	return nil
}
