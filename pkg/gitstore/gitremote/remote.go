// Package gitremote exchanges branches between a gitrepo.Repo and a git
// remote: Fetch brings a remote branch into a remote-tracking ref, Push
// sets a remote branch to a local commit with a compare-and-swap.
//
// git:// and file:// remotes (and local paths) are spoken to with go-git's
// protocol packages over gitrepo's storage: fetched objects are collected
// while go-git parses the pack and written as one durable pack
// (gitrepo.Repo.Write) before the tracking ref names them (storage.go);
// a push sends only the objects of the commits the remote lacks, found by
// walking down from the new head to the remote's (objects.go). go-git's
// Remote (and its http and ssh transports) would need modules go.mod does
// not require, so http(s):// and ssh:// remotes go through the git CLI
// against the bare repository instead (cli.go), which gitrepo allows at
// any time.
package gitremote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/file"
	gittransport "github.com/go-git/go-git/v5/plumbing/transport/git"

	"github.com/heaven-dev/heaven/pkg/gitstore/gitrepo"
)

// ErrRejected: the remote did not take a push because its branch is no
// longer at the commit the push expected (someone else pushed first).
// Fetch, merge and push again.
var ErrRejected = errors.New("gitremote: push rejected: the remote branch moved")

const (
	// packWindow is how many objects the pack encoder compares to find
	// deltas (git's default).
	packWindow = 10
	// havesPerRef bounds the commits of each local ref offered to the
	// remote as common ground (go-git's number); the ref's own commit,
	// usually the last one exchanged, comes first.
	havesPerRef = 100
)

// Fetch fetches branch of the remote at url into the ref tracking (a
// refs/remotes/... name) of repo and returns the branch's commit: zero,
// and tracking left alone, when the remote has no such branch. The
// commits of tracking and of the refs haves (the local branch that was
// pushed there) tell the remote what need not be sent.
func Fetch(ctx context.Context, repo *gitrepo.Repo, url, branch string, tracking plumbing.ReferenceName, haves ...plumbing.ReferenceName) (plumbing.Hash, error) {
	ep, cl, err := endpoint(url)
	if errors.Is(err, errUseCLI) {
		return cliFetch(ctx, repo, url, branch, tracking)
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := fetch(ctx, repo, ep, cl, branch, tracking, haves)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("fetching %s from %s: %w", branch, url, err)
	}
	return h, nil
}

func fetch(ctx context.Context, repo *gitrepo.Repo, ep *transport.Endpoint, cl transport.Transport, branch string,
	tracking plumbing.ReferenceName, haves []plumbing.ReferenceName) (plumbing.Hash, error) {
	if err := reachable(ctx, ep); err != nil {
		return plumbing.ZeroHash, err
	}
	sess, err := cl.NewUploadPackSession(ep, nil)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	refs, err := ar.AllReferences()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	ref, ok := refs[plumbing.NewBranchReferenceName(branch)]
	if !ok || ref.Type() != plumbing.HashReference {
		return plumbing.ZeroHash, nil
	}
	want := ref.Hash()
	s := newStorage(repo)
	if s.HasEncodedObject(want) != nil {
		req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
		req.Wants = []plumbing.Hash{want}
		if req.Haves, err = haveCommits(repo, append([]plumbing.ReferenceName{tracking}, haves...)); err != nil {
			return plumbing.ZeroHash, err
		}
		if err := receivePack(ctx, sess, req, s); err != nil {
			return plumbing.ZeroHash, err
		}
		if err := s.flush(); err != nil {
			return plumbing.ZeroHash, err
		}
		if _, err := object.GetCommit(repo.Storer(), want); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("the remote's commit %s did not arrive: %w", want, err)
		}
	}
	cur, err := repo.Ref(tracking)
	if err != nil || cur == want {
		return want, err
	}
	// Only this fetch moves the tracking ref; a force-pushed remote moves
	// it anywhere, as git's "+" refspec does.
	if err := repo.CompareAndSwapRef(tracking, want, cur); err != nil {
		return plumbing.ZeroHash, err
	}
	return want, nil
}

// receivePack asks for the pack of req and stores its objects in s.
func receivePack(ctx context.Context, sess transport.UploadPackSession, req *packp.UploadPackRequest, s *fetchStorage) (err error) {
	resp, err := sess.UploadPack(ctx, req)
	if errors.Is(err, transport.ErrEmptyUploadPackRequest) {
		return nil // we have it all
	}
	if err != nil {
		return err
	}
	defer func() {
		if cerr := resp.Close(); err == nil {
			err = cerr
		}
	}()
	var r io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		r = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		r = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	p, err := packfile.NewParserWithStorage(packfile.NewScanner(r), s)
	if err != nil {
		return err
	}
	_, err = p.Parse()
	return err
}

// haveCommits lists commits of refs (newest first, at most havesPerRef of
// each) that the remote may have too.
func haveCommits(repo *gitrepo.Repo, refs []plumbing.ReferenceName) ([]plumbing.Hash, error) {
	seen := map[plumbing.Hash]bool{}
	var out []plumbing.Hash
	for _, name := range refs {
		h, err := repo.Ref(name)
		if err != nil {
			return nil, err
		}
		if h.IsZero() || seen[h] {
			continue
		}
		c, err := object.GetCommit(repo.Storer(), h)
		if err != nil {
			return nil, fmt.Errorf("read commit %s of %s: %w", h, name, err)
		}
		n := 0
		err = object.NewCommitPreorderIter(c, seen, nil).ForEach(func(c *object.Commit) error {
			seen[c.Hash] = true
			out = append(out, c.Hash)
			if n++; n == havesPerRef {
				return storer.ErrStop
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Push sets branch of the remote at url to commit head of repo if the
// branch is at old (zero: absent), as `git push --force-with-lease` does:
// the caller makes sure that head descends from old. It sends the objects
// of the commits reachable from head but not from old, and returns
// ErrRejected when the branch is elsewhere (nil when it is at head).
func Push(ctx context.Context, repo *gitrepo.Repo, url, branch string, head, old plumbing.Hash) error {
	ep, cl, err := endpoint(url)
	if errors.Is(err, errUseCLI) {
		return cliPush(ctx, repo, url, branch, head, old)
	}
	if err != nil {
		return err
	}
	if err := push(ctx, repo, ep, cl, branch, head, old); err != nil {
		return fmt.Errorf("pushing %s to %s: %w", branch, url, err)
	}
	return nil
}

func push(ctx context.Context, repo *gitrepo.Repo, ep *transport.Endpoint, cl transport.Transport, branch string, head, old plumbing.Hash) error {
	if err := reachable(ctx, ep); err != nil {
		return err
	}
	sess, err := cl.NewReceivePackSession(ep, nil)
	if err != nil {
		return err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return err
	}
	name := plumbing.NewBranchReferenceName(branch)
	refs, err := ar.AllReferences()
	if err != nil {
		return err
	}
	current := plumbing.ZeroHash
	if ref, ok := refs[name]; ok {
		current = ref.Hash()
	}
	switch current {
	case head:
		return nil // there already
	case old:
	default:
		return fmt.Errorf("%w: it is at %s, not %s", ErrRejected, current, old)
	}
	objects, err := newObjects(repo.Storer(), head, old)
	if err != nil {
		return err
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	req.Commands = []*packp.Command{{Name: name, Old: old, New: head}}
	report, err := sendPack(ctx, sess, repo, req, objects, !ar.Capabilities.Supports(capability.OFSDelta))
	switch {
	case err != nil:
		return err
	case report == nil:
		return nil
	case report.UnpackStatus != "ok":
		return fmt.Errorf("the remote failed to unpack: %s", report.UnpackStatus)
	case report.Error() != nil:
		return fmt.Errorf("%w: %v", ErrRejected, report.Error())
	}
	return nil
}

// sendPack streams a pack of objects to the remote with the update
// request, as go-git's push does.
func sendPack(ctx context.Context, sess transport.ReceivePackSession, repo *gitrepo.Repo, req *packp.ReferenceUpdateRequest,
	objects []plumbing.Hash, refDeltas bool) (*packp.ReportStatus, error) {
	rd, wr := io.Pipe()
	req.Packfile = rd
	done := make(chan error, 1)
	go func() {
		_, err := packfile.NewEncoder(wr, repo.Storer(), refDeltas).Encode(objects, packWindow)
		if err != nil {
			done <- wr.CloseWithError(err)
			return
		}
		done <- wr.Close()
	}()
	report, err := sess.ReceivePack(ctx, req)
	if err != nil {
		_ = rd.CloseWithError(err) // unblocks the encoder
		<-done
		return nil, err
	}
	if err := <-done; err != nil {
		return nil, err
	}
	return report, nil
}

// dialTimeout bounds connecting to a git:// remote.
const dialTimeout = 10 * time.Second

// reachable connects to a git:// remote once, within ctx and dialTimeout,
// before go-git does: go-git dials without a deadline, and a remote whose
// host drops packets would hold the caller for the kernel's connect
// timeout (minutes) whatever ctx says.
func reachable(ctx context.Context, ep *transport.Endpoint) error {
	if ep.Protocol != "git" {
		return nil
	}
	port := ep.Port
	if port == 0 {
		port = 9418 // git's
	}
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ep.Host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return c.Close()
}

// errUseCLI: the URL's protocol is one go-git cannot speak here.
var errUseCLI = errors.New("gitremote: protocol served by the git CLI")

// endpoint parses url and picks go-git's transport for it.
func endpoint(url string) (*transport.Endpoint, transport.Transport, error) {
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return nil, nil, fmt.Errorf("remote URL %q: %w", url, err)
	}
	switch ep.Protocol {
	case "git":
		return ep, gittransport.DefaultClient, nil
	case "file":
		return ep, file.DefaultClient, nil
	case "http", "https", "ssh":
		return nil, nil, errUseCLI
	}
	return nil, nil, fmt.Errorf("remote URL %q: unsupported protocol %q", url, ep.Protocol)
}

// ValidateURL says whether url names a remote Fetch and Push can reach.
func ValidateURL(url string) error {
	_, _, err := endpoint(url)
	if errors.Is(err, errUseCLI) {
		return nil
	}
	return err
}
