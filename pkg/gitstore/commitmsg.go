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
//
// The store's answer to a branch moved from outside (a force-push) is a
// merge commit whose tree is the pushed one: its files are not the store's
// own and are read like any pushed file. Its message names its revision
// but no operations, and says so:
//
//	Merge 1a2b3c4d5e6f: the branch was moved from 6f5e4d3c2b1a, keep its content
//
//	Heaven-Content: outside
//	Heaven-Revision: 43

const (
	revisionTrailer = "Heaven-Revision: "
	outsideTrailer  = "Heaven-Content: outside"
)

// outsideMessage renders the message of a commit holding content from
// outside at revision rev.
func outsideMessage(subject string, rev int64) string {
	return fmt.Sprintf("%s\n\n%s\n%s%d\n", subject, outsideTrailer, revisionTrailer, rev)
}

// parseOutsideRevision reads the revision of a commit rendered by
// outsideMessage.
func parseOutsideRevision(msg string) (int64, bool) {
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	n := len(lines)
	if n < 3 || lines[n-2] != outsideTrailer || !strings.HasPrefix(lines[n-1], revisionTrailer) {
		return 0, false
	}
	rev, err := strconv.ParseInt(strings.TrimPrefix(lines[n-1], revisionTrailer), 10, 64)
	return rev, err == nil && rev > 0
}

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
