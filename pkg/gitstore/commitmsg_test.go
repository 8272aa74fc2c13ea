package gitstore

import (
	"reflect"
	"strings"
	"testing"
)

func TestCommitMessageRoundTrip(t *testing.T) {
	tests := [][]commitOp{
		{{rev: 42, kind: opUpdate, stem: "registry/configmaps/default/web"}},
		{{rev: 40, kind: opCreate, stem: "a"}, {rev: 41, kind: opUpdate, stem: "b"}, {rev: 41, kind: opDelete, stem: "c"}},
	}
	for _, ops := range tests {
		msg := commitMessage(ops)
		got, last, ok := parseCommitOps(msg)
		if !ok || last != ops[len(ops)-1].rev || !reflect.DeepEqual(got, ops) {
			t.Errorf("parse(%q) = %v, %d, %v; want %v", msg, got, last, ok, ops)
		}
	}
}

func TestCommitMessageSubjectIsReadable(t *testing.T) {
	msg := commitMessage([]commitOp{{rev: 7, kind: opCreate, stem: "core/configmaps/default/x"}})
	if subject := strings.SplitN(msg, "\n", 2)[0]; subject != "create core/configmaps/default/x" {
		t.Fatalf("subject = %q", subject)
	}
}

func TestParseCommitOpsRejectsForeignMessages(t *testing.T) {
	for _, msg := range []string{
		"Merge branch 'x'\n",
		"update a\n\nHeaven-Revision: x\n",
		"2 writes\n\n5 update a\n3 update b\n\nHeaven-Revision: 5\n", // descending
		"2 writes\n\n3 update a\n4 update b\n\nHeaven-Revision: 9\n", // trailer disagrees
		"fix typo\n\nHeaven-Revision: 3\n",                           // no ops
	} {
		if ops, _, ok := parseCommitOps(msg); ok {
			t.Errorf("parseCommitOps(%q) accepted: %v", msg, ops)
		}
	}
}
