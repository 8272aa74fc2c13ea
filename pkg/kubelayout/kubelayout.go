// Package kubelayout maps the etcd keys of a stock kube-apiserver to the
// keys of a heaven's branch, so that a kube-apiserver can run on a heaven's
// branch through heaven-server's etcd API while heavens, merges and remotes
// work on the same objects.
//
// kube-apiserver keeps an object of a built-in resource at
// /registry/<its prefix>/<namespace>/<name>, its prefix mostly the
// resource's name (/registry/pods/…, /registry/deployments/…) and for a few
// older ones another (/registry/services/specs/…, /registry/minions/…);
// everything else (custom resources, CustomResourceDefinitions,
// APIServices) at /registry/<group>/<resource>/…. A heaven keeps every
// resource at /<group or core>/<resource>/…. Built-in resources map one to
// one; the rest of /registry/ is the rest of the branch.
package kubelayout

import (
	"fmt"
	"path"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/heaven-dev/heaven/pkg/builtin"
	"github.com/heaven-dev/heaven/pkg/gitstore/etcdv3"
	"github.com/heaven-dev/heaven/pkg/heavenapi/storage"
)

// Prefix is kube-apiserver's default --etcd-prefix.
const Prefix = "/registry"

// notServed are resources kube-apiserver keeps that heavens don't serve
// (API Priority and Fairness is heaven-server's own queueing; storage
// versions are kube-apiserver's bookkeeping). Their objects go where a
// heaven would keep them too, under their group.
var notServed = []schema.GroupResource{
	{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"},
	{Group: "flowcontrol.apiserver.k8s.io", Resource: "prioritylevelconfigurations"},
	{Group: "internal.apiserver.k8s.io", Resource: "storageversions"},
}

// KeyMap is the key map of a kube-apiserver run with --etcd-prefix=Prefix
// (below the branch's component in prefix mode: --etcd-prefix=/<heaven>/registry).
func KeyMap() (*etcdv3.KeyMap, error) {
	grs := sets.New(notServed...)
	for _, kubernetes := range []bool{false, true} {
		for _, r := range builtin.Resources(kubernetes) {
			grs.Insert(r.GroupResource)
		}
	}
	pairs := []etcdv3.PrefixPair{{Client: Prefix + "/", Store: "/"}}
	for _, gr := range grs.UnsortedList() { // NewKeyMap orders them
		kube, err := builtin.KubeAPIServerPrefix(gr)
		if err != nil {
			return nil, fmt.Errorf("kube-apiserver's prefix of %s: %w", gr, err)
		}
		pairs = append(pairs, etcdv3.PrefixPair{
			Client: path.Join(Prefix, kube) + "/",
			Store:  "/" + storage.ResourcePrefix(gr) + "/",
		})
	}
	return etcdv3.NewKeyMap(pairs)
}
