package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	kjson "sigs.k8s.io/json"

	builtin "github.com/heaven-dev/heaven/pkg/builtin"
	heavenctrl "github.com/heaven-dev/heaven/pkg/controllers/heaven"
	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/objectfile"
)

// Files people commit to heavens' branches (git push, or anything else that
// writes the repository) are read with ObjectFiles: a file that can't be
// served keeps its object's last good version (see pkg/gitstore's
// problems.go). outsideFiles makes such files visible where people look:
// a gauge per heaven, a Warning Event in the heaven when a file goes bad,
// and the list the Heaven controller turns into a condition.

// ObjectFiles reads files of heaven branches as objects of the built-in
// types every heaven serves (custom resources are checked for shape only).
func ObjectFiles() (*objectfile.Reader, error) {
	types := map[schema.GroupResource]objectfile.Type{
		{Group: apiextensionsv1.GroupName, Resource: "customresourcedefinitions"}: {Kind: "CustomResourceDefinition",
			Decode: decodeInto(&apiextensionsv1.CustomResourceDefinition{})},
	}
	for _, r := range builtin.Resources(true) {
		stored, err := builtin.NewStored(r)
		if err != nil {
			return nil, err
		}
		types[r.GroupResource] = objectfile.Type{Kind: r.Kind, Namespaced: r.Namespaced, Decode: decodeInto(stored)}
	}
	return &objectfile.Reader{Types: types}, nil
}

// decodeInto decodes into a new object of empty's type, with the JSON
// decoding the API server's storage uses.
func decodeInto(empty runtime.Object) func([]byte) error {
	return func(data []byte) error {
		return kjson.UnmarshalCaseSensitivePreserveInts(data, empty.DeepCopyObject())
	}
}

// outsideFiles tracks every open branch's files that are not served.
type outsideFiles struct {
	metrics *metrics
	// event, if set, tells the heaven about a file that went bad (in the
	// background; it must not block).
	event func(heaven string, p gitstore.FileProblem)

	// changed, if set, is told which heaven's problems changed (the
	// Heaven controller's condition); it must not block.
	changed func(heaven string)

	mu       sync.Mutex
	problems map[string][]gitstore.FileProblem // by heaven
	known    map[string]bool                   // heavens whose branch was read
}

func newOutsideFiles(m *metrics) *outsideFiles {
	return &outsideFiles{metrics: m, problems: map[string][]gitstore.FileProblem{}, known: map[string]bool{}}
}

// update is gitstore.Options.OnProblems: it runs on the branch's writer.
func (o *outsideFiles) update(heaven string, problems []gitstore.FileProblem) {
	o.mu.Lock()
	old := o.problems[heaven]
	o.known[heaven] = true
	if len(problems) == 0 {
		delete(o.problems, heaven)
	} else {
		o.problems[heaven] = problems
	}
	o.mu.Unlock()
	o.metrics.unservedFiles.WithLabelValues(heaven).Set(float64(len(problems)))
	if o.changed != nil {
		o.changed(heaven)
	}
	if o.event == nil {
		return
	}
	known := map[string]string{}
	for _, p := range old {
		known[p.Path] = p.Err
	}
	for _, p := range problems {
		if err, seen := known[p.Path]; !seen || err != p.Err {
			o.event(heaven, p)
		}
	}
}

// Problems lists heaven's files that are not served; known is false until
// its branch was read (problems are found when it is).
func (o *outsideFiles) Problems(heaven string) (problems []gitstore.FileProblem, known bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.problems[heaven], o.known[heaven]
}

// fileProblems is the Heaven controller's view of Problems.
func (s *Server) fileProblems(heaven string) ([]heavenctrl.FileProblem, bool) {
	if s.outside == nil {
		return nil, false
	}
	problems, known := s.outside.Problems(heaven)
	out := make([]heavenctrl.FileProblem, len(problems))
	for i, p := range problems {
		out[i] = heavenctrl.FileProblem{Path: p.Path, Commit: p.Commit.String(), Err: p.Err}
	}
	return out, known
}

// problemEvent is the Event that tells a heaven's users about a file that
// is not served, attached to the object the file was meant to be.
func problemEvent(p gitstore.FileProblem, kinds map[schema.GroupResource]objectfile.Type) *corev1.Event {
	ref := corev1.ObjectReference{Namespace: metav1.NamespaceDefault, Name: p.Path}
	if path, err := objectfile.ParseKey(p.Key); err == nil {
		ref = corev1.ObjectReference{Kind: kinds[path.GroupResource].Kind, Namespace: path.Namespace, Name: path.Name}
		if path.Group == "" {
			ref.APIVersion = "v1"
		}
	}
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	now := metav1.NewTime(time.Now())
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: "outside-commit-", Namespace: ns},
		InvolvedObject: ref,
		Reason:         "OutsideCommitNotServed",
		Message: fmt.Sprintf("File %s of commit %s is not served: %s. The object keeps its last good version until a commit fixes or removes the file.",
			p.Path, p.Commit, p.Err),
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "heaven-server"},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
}

// emitProblemEvent creates the Event in heaven if it is running; a heaven
// that is not running gets none (its gauge and its Heaven's condition
// still say it).
func (s *Server) emitProblemEvent(heaven string, p gitstore.FileProblem) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, release, err := s.heavens.acquireRunning(ctx, heaven, false, true)
		if err != nil {
			return
		}
		defer release()
		kube, err := s.loopbackKube(heaven)
		if err == nil {
			ev := problemEvent(p, s.objectFiles.Types)
			_, err = kube.CoreV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
		}
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Could not record an Event for a file not served", "heaven", heaven, "path", p.Path, "err", err)
		}
	}()
}
