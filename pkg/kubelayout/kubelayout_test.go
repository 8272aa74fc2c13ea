package kubelayout

import (
	"testing"
)

func TestKeyMap(t *testing.T) {
	m, err := KeyMap()
	if err != nil {
		t.Fatal(err)
	}
	for client, store := range map[string]string{
		"/registry/pods/default/web-1":                                   "/core/pods/default/web-1",
		"/registry/services/specs/default/kubernetes":                    "/core/services/default/kubernetes",
		"/registry/services/endpoints/default/kubernetes":                "/core/endpoints/default/kubernetes",
		"/registry/minions/node-1":                                       "/core/nodes/node-1",
		"/registry/controllers/default/rc":                               "/core/replicationcontrollers/default/rc",
		"/registry/ingress/default/web":                                  "/networking.k8s.io/ingresses/default/web",
		"/registry/deployments/default/web":                              "/apps/deployments/default/web",
		"/registry/configmaps/default/cm":                                "/core/configmaps/default/cm",
		"/registry/clusterroles/admin":                                   "/rbac.authorization.k8s.io/clusterroles/admin",
		"/registry/leases/kube-system/kube-scheduler":                    "/coordination.k8s.io/leases/kube-system/kube-scheduler",
		"/registry/apiextensions.k8s.io/customresourcedefinitions/w.x.y": "/apiextensions.k8s.io/customresourcedefinitions/w.x.y",
		"/registry/flowschemas/exempt":                                   "/flowcontrol.apiserver.k8s.io/flowschemas/exempt",
		"/registry/example.com/widgets/default/w":                        "/example.com/widgets/default/w",
	} {
		s, err := m.StoreKey([]byte(client))
		if err != nil || string(s) != store {
			t.Errorf("%s: store key %q, %v; want %q", client, s, err, store)
		}
		if c := m.ClientKey([]byte(store)); string(c) != client {
			t.Errorf("%s: client key %q, want %q", store, c, client)
		}
	}
}
