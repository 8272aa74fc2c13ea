package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/heaven-dev/heaven/pkg/builtin"
	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/heavenapi/storage"
)

// /clusters/*/<collection> lists and watches one resource across every
// heaven, for server administrators (kcp's /clusters/*). Each object
// carries the heaven it lives in (HeavenAnnotation). The list's resource
// version, and each watch event's object's, is a composite of every
// heaven's revision: a watch from it resumes in each heaven where it left
// off, across restarts of heaven-server. Objects are read from the
// heavens' branches: stopped heavens are read from git without starting
// them; a watch runs every heaven while it lasts. Other paths under
// /clusters/* (discovery, OpenAPI) are root's. Only JSON is served, and
// only resources kept in git (not events or leases).

// AllHeavens is the heaven name of the cross-heaven paths.
const AllHeavens = "*"

// HeavenAnnotation names an object's heaven in cross-heaven answers.
const HeavenAnnotation = "heaven.dev/heaven"

// collection is a request for one resource across heavens.
type collection struct {
	gvr       schema.GroupVersionResource
	namespace string
	// storage decodes a built-in resource's stored objects (nil for custom
	// resources); built once per request, not per object.
	storage runtime.Decoder
}

// prefix is the storage key prefix of the collection in every heaven.
func (c collection) prefix() string {
	p := "/" + storage.ResourcePrefix(c.gvr.GroupResource()) + "/"
	if c.namespace != "" {
		p += c.namespace + "/"
	}
	return p
}

// parseCollection reads /api/v1/[namespaces/NS/]RES or
// /apis/G/V/[namespaces/NS/]RES; ok is false for any other path.
func parseCollection(path string) (collection, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var c collection
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		c.gvr.Version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		c.gvr.Group, c.gvr.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return c, false
	}
	if len(parts) == 3 && parts[0] == "namespaces" {
		c.namespace, parts = parts[1], parts[2:]
	}
	if len(parts) != 1 || parts[0] == "" {
		return c, false
	}
	c.gvr.Resource = parts[0]
	return c, true
}

// compositeRV is every heaven's revision, encoded as one resource version.
type compositeRV map[string]int64

func (v compositeRV) String() string {
	names := make([]string, 0, len(v))
	for n := range v {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%d", n, v[n])
	}
	return base64.RawURLEncoding.EncodeToString([]byte(b.String()))
}

func parseCompositeRV(s string) (compositeRV, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("resource version %q is not one of /clusters/*", s)
	}
	v := compositeRV{}
	for _, pair := range strings.Split(string(raw), ",") {
		if pair == "" {
			continue
		}
		name, rev, ok := strings.Cut(pair, "=")
		n, err := strconv.ParseInt(rev, 10, 64)
		if !ok || err != nil || ValidateHeavenName(name) != nil {
			return nil, fmt.Errorf("resource version %q is not one of /clusters/*", s)
		}
		v[name] = n
	}
	return v, nil
}

// serveAllHeavens answers a request to /clusters/*; the front has checked
// that the user is an administrator.
func (s *Server) serveAllHeavens(w http.ResponseWriter, r *http.Request, path string) {
	c, ok := parseCollection(path)
	if !ok {
		if r.Method == http.MethodGet && !strings.Contains(strings.Trim(path, "/"), "namespaces/") {
			s.front.serveHeaven(w, r, RootHeaven, path) // discovery, OpenAPI, version
			return
		}
		writeStatus(w, r, apierrors.NewNotFound(schema.GroupResource{Group: "heaven.dev", Resource: "heavens"}, AllHeavens+path+
			": across heavens only lists and watches of a collection are served"))
		return
	}
	if r.Method != http.MethodGet {
		writeStatus(w, r, apierrors.NewMethodNotSupported(c.gvr.GroupResource(), r.Method))
		return
	}
	if s.ephemeral[c.gvr.GroupResource()] || s.repo == nil {
		writeStatus(w, r, apierrors.NewBadRequest(fmt.Sprintf("%s are not kept in git: ask each heaven", c.gvr.GroupResource())))
		return
	}
	var err error
	if c.storage, err = storageDecoder(c.gvr.GroupResource()); err != nil {
		writeStatus(w, r, apierrors.NewInternalError(err))
		return
	}
	q := r.URL.Query()
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		s.watchAllHeavens(w, r, c, q.Get("resourceVersion"))
		return
	}
	list, rv, err := s.listAllHeavens(r.Context(), c)
	if err != nil {
		writeStatus(w, r, apierrors.NewInternalError(err))
		return
	}
	kind := "List"
	if r, ok := builtinResource(c.gvr.GroupResource()); ok {
		kind = r.Kind + "List"
	} else if len(list) > 0 {
		kind, _ = list[0]["kind"].(string)
		kind += "List"
	}
	out := map[string]any{"apiVersion": c.gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"resourceVersion": rv.String()}, "items": list}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// heavenNames are root and every heaven with a Heaven object.
func (s *Server) heavenNames() []string {
	names := []string{RootHeaven}
	if ctrl := s.heavenCtrl.Load(); ctrl != nil {
		names = append(names, ctrl.Names()...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// listAllHeavens reads the collection in every heaven: a running heaven's
// open branch, a stopped one's head commit.
func (s *Server) listAllHeavens(ctx context.Context, c collection) ([]map[string]any, compositeRV, error) {
	rv := compositeRV{}
	var items []map[string]any
	for _, name := range s.heavenNames() {
		kvs, rev, err := s.readCollection(ctx, name, c)
		if err != nil {
			return nil, nil, fmt.Errorf("heaven %s: %w", name, err)
		}
		rv[name] = rev
		for _, kv := range kvs {
			obj, err := s.objectOf(c, name, kv.Value, kv.ModRevision)
			if err != nil {
				return nil, nil, fmt.Errorf("heaven %s: %s: %w", name, kv.Key, err)
			}
			items = append(items, obj)
		}
	}
	return items, rv, nil
}

func (s *Server) readCollection(ctx context.Context, name string, c collection) ([]gitstore.KeyValue, int64, error) {
	prefix := c.prefix()
	if s.heavens.isRunning(name) {
		b, err := s.repo.Branch(ctx, name)
		if err != nil {
			return nil, 0, err
		}
		res, err := b.Range(ctx, &gitstore.RangeRequest{Key: prefix, End: prefixEnd(prefix)})
		if err != nil {
			return nil, 0, err
		}
		return res.KVs, res.Revision, nil
	}
	head, rev, err := s.repo.HeadRevision(name)
	if err != nil || head.IsZero() {
		return nil, rev, err
	}
	res, err := s.repo.RangeCommit(head, rev, &gitstore.RangeRequest{Key: prefix, End: prefixEnd(prefix)})
	if err != nil {
		return nil, 0, err
	}
	return res.KVs, rev, nil
}

func prefixEnd(prefix string) string { return clientv3.GetPrefixRangeEnd(prefix) }

// objectOf is a stored object in the requested version, with its heaven
// and resource version: built-in types are converted as the heaven's API
// server would; custom resources are served in the version they are
// stored in, and only if that is the one asked for.
func (s *Server) objectOf(c collection, heaven string, stored []byte, rev int64) (map[string]any, error) {
	data := stored
	if c.storage != nil {
		obj, _, err := c.storage.Decode(stored, nil, nil)
		if err != nil {
			return nil, err
		}
		if data, err = runtime.Encode(legacyscheme.Codecs.LegacyCodec(c.gvr.GroupVersion()), obj); err != nil {
			return nil, err
		}
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	if v, _ := out["apiVersion"].(string); v != c.gvr.GroupVersion().String() {
		return nil, fmt.Errorf("stored as %s, not %s", v, c.gvr.GroupVersion())
	}
	meta, _ := out["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		out["metadata"] = meta
	}
	annotations, _ := meta["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
	}
	annotations[HeavenAnnotation] = heaven
	meta["annotations"] = annotations
	meta["resourceVersion"] = strconv.FormatInt(rev, 10)
	return out, nil
}

// storageDecoder is the storage codec of a built-in resource, nil for
// others.
func storageDecoder(gr schema.GroupResource) (runtime.Decoder, error) {
	r, ok := builtinResource(gr)
	if !ok {
		return nil, nil
	}
	internal, err := legacyscheme.Scheme.New(schema.GroupVersionKind{Group: r.GroupResource.Group, Version: runtime.APIVersionInternal, Kind: r.Kind})
	if err != nil {
		return nil, err
	}
	codec, _, err := builtin.StorageCodec(r.GroupResource, internal)
	return codec, err
}

func builtinResource(gr schema.GroupResource) (builtin.Resource, bool) {
	for _, r := range builtin.Resources(true) {
		if r.GroupResource == gr {
			return r, true
		}
	}
	return builtin.Resource{}, false
}

// watchAllHeavens streams the collection's changes in every heaven, each
// heaven from its revision in rv (from now when rv is empty or "0", after
// the current objects as ADDED events).
func (s *Server) watchAllHeavens(w http.ResponseWriter, r *http.Request, c collection, rv string) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var from compositeRV
	if rv != "" && rv != "0" {
		var err error
		if from, err = parseCompositeRV(rv); err != nil {
			writeStatus(w, r, apierrors.NewBadRequest(err.Error()))
			return
		}
	}
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	send := func(typ string, obj any) bool {
		if err := enc.Encode(metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: mustJSON(obj)}}); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}

	// Every heaven runs (and keeps its branch open) while the watch lasts.
	type heavenWatch struct {
		name string
		w    *gitstore.Watcher
	}
	events := make(chan heavenEvent)
	current := compositeRV{}
	var started []heavenWatch
	defer func() {
		for _, hw := range started {
			hw.w.Close()
		}
	}()
	var initial []map[string]any
	for _, name := range s.heavenNames() {
		_, release, err := s.heavens.acquire(withLoopback(ctx), name, true, true)
		if err != nil {
			writeStatus(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("heaven %s: %v", name, err)))
			return
		}
		defer release()
		b, err := s.repo.Branch(ctx, name)
		if err != nil {
			writeStatus(w, r, apierrors.NewInternalError(err))
			return
		}
		start, ok := from[name]
		if !ok {
			res, err := b.Range(ctx, &gitstore.RangeRequest{Key: c.prefix(), End: prefixEnd(c.prefix())})
			if err != nil {
				writeStatus(w, r, apierrors.NewInternalError(err))
				return
			}
			start = res.Revision
			if from == nil { // a watch from now lists what is there first
				for _, kv := range res.KVs {
					obj, err := s.objectOf(c, name, kv.Value, kv.ModRevision)
					if err == nil {
						initial = append(initial, obj)
					}
				}
			}
		}
		current[name] = start
		hw, err := b.Watch(ctx, gitstore.WatchRequest{Key: c.prefix(), End: prefixEnd(c.prefix()), StartRevision: start + 1, PrevKV: true})
		if err != nil {
			writeStatus(w, r, apierrors.NewInternalError(err))
			return
		}
		started = append(started, heavenWatch{name, hw})
		go forwardHeavenEvents(ctx, name, hw, events)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	for _, obj := range initial {
		obj["metadata"].(map[string]any)["resourceVersion"] = current.String()
		if !send("ADDED", obj) {
			return
		}
	}
	if flusher != nil {
		flusher.Flush()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case he := <-events:
			if he.expired {
				send("ERROR", &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
					Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
					Message: fmt.Sprintf("heaven %s: the revision to watch from has been compacted: list again", he.heaven)})
				return
			}
			ev := he.event
			current[he.heaven] = ev.KV.ModRevision
			typ, value := "MODIFIED", ev.KV.Value
			switch {
			case ev.Type == gitstore.EventDelete:
				typ = "DELETED"
				if ev.PrevKV != nil {
					value = ev.PrevKV.Value
				}
			case ev.KV.CreateRevision == ev.KV.ModRevision:
				typ = "ADDED"
			}
			if value == nil {
				continue // a delete whose last value was compacted
			}
			obj, err := s.objectOf(c, he.heaven, value, ev.KV.ModRevision)
			if err != nil {
				continue
			}
			obj["metadata"].(map[string]any)["resourceVersion"] = current.String()
			if !send(typ, obj) {
				return
			}
		}
	}
}

// heavenEvent is one event of one heaven's watch, or its end because the
// history to watch from is compacted.
type heavenEvent struct {
	heaven  string
	event   gitstore.Event
	expired bool
}

func forwardHeavenEvents(ctx context.Context, heaven string, w *gitstore.Watcher, out chan<- heavenEvent) {
	for resp := range w.Responses() {
		if resp.CompactRevision > 0 {
			select {
			case out <- heavenEvent{heaven: heaven, expired: true}:
			case <-ctx.Done():
			}
			return
		}
		for _, ev := range resp.Events {
			select {
			case out <- heavenEvent{heaven: heaven, event: ev}:
			case <-ctx.Done():
				return
			}
		}
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("{}")
	}
	return b
}
