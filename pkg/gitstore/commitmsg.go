package gitstore

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The store's commits say what happened in their message:
//
//	update registry/configmaps/default/web
//
//	Heaven-Revision: 42
//
// and, for a commit holding several writes, one line per operation:
//
//	3 writes: create registry/a, update registry/b, delete registry/c
//
//	40 create registry/a
//	41 update registry/b
//	42 delete registry/c
//
//	Heaven-Revision: 42
//
// Paths are key paths without extension (KeyPath). Rebuilding the index from
// the branch reads revisions back from these lines (parseCommitOps); a
// commit without them (made by someone else) is one revision.

const revisionTrailer = "Heaven-Revision: "

type opKind string

const (
	opCreate opKind = "create"
	opUpdate opKind = "update"
	opDelete opKind = "delete"
)

// commitOp is one write in a commit.
type commitOp struct {
	rev  int64
	kind opKind
	stem string // KeyPath of the key
}

// commitMessage renders the message of a commit holding ops (ascending rev).
func commitMessage(ops []commitOp) string {
	var b strings.Builder
	last := ops[len(ops)-1].rev
	if len(ops) == 1 {
		fmt.Fprintf(&b, "%s %s\n\n", ops[0].kind, ops[0].stem)
	} else {
		fmt.Fprintf(&b, "%d writes: ", len(ops))
		subject := 0
		for i, op := range ops {
			s := fmt.Sprintf("%s %s", op.kind, op.stem)
			if subject+len(s) > 100 && i > 0 {
				b.WriteString(", …")
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(s)
			subject += len(s) + 2
		}
		b.WriteString("\n\n")
		for _, op := range ops {
			fmt.Fprintf(&b, "%d %s %s\n", op.rev, op.kind, op.stem)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s%d\n", revisionTrailer, last)
	return b.String()
}

var (
	opLine      = regexp.MustCompile(`^(\d+) (create|update|delete) (\S+)$`)
	subjectLine = regexp.MustCompile(`^(create|update|delete) (\S+)$`)
)

// parseCommitOps reads the ops back from a message. ok is false when the
// message is not one of ours (no trailer, or lines that do not add up).
func parseCommitOps(msg string) (ops []commitOp, last int64, ok bool) {
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	trailer := lines[len(lines)-1]
	if !strings.HasPrefix(trailer, revisionTrailer) {
		return nil, 0, false
	}
	last, err := strconv.ParseInt(strings.TrimPrefix(trailer, revisionTrailer), 10, 64)
	if err != nil || last <= 0 {
		return nil, 0, false
	}
	for _, l := range lines[1 : len(lines)-1] {
		if m := opLine.FindStringSubmatch(l); m != nil {
			rev, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				return nil, 0, false
			}
			ops = append(ops, commitOp{rev: rev, kind: opKind(m[2]), stem: m[3]})
		}
	}
	if len(ops) == 0 {
		m := subjectLine.FindStringSubmatch(lines[0])
		if m == nil {
			return nil, 0, false
		}
		ops = []commitOp{{rev: last, kind: opKind(m[1]), stem: m[2]}}
	}
	for i, op := range ops {
		if op.rev > last || (i > 0 && op.rev < ops[i-1].rev) {
			return nil, 0, false
		}
	}
	if ops[len(ops)-1].rev != last {
		return nil, 0, false
	}
	return ops, last, true
}
