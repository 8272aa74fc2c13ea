package server

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"runtime"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/heaven-dev/heaven/pkg/pki"
)

// Version is what /version reports: the Kubernetes API version every heaven
// serves.
var Version = version.Info{
	Major:      "1",
	Minor:      "37",
	GitVersion: "v1.37.1+heaven",
	GoVersion:  runtime.Version(),
	Compiler:   runtime.Compiler,
	Platform:   runtime.GOOS + "/" + runtime.GOARCH,
}

func verifyOptions(b *pki.Bundle) x509.VerifyOptions {
	return x509.VerifyOptions{Roots: b.CAPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
}

// unlessRevoked refuses certificates of revoked users (a deleted
// SyncTarget's syncer) before converting them to users.
func unlessRevoked(revoked *pki.Revocations, convert x509request.UserConversion) x509request.UserConversion {
	return x509request.UserConversionFunc(func(chain []*x509.Certificate) (*authenticator.Response, bool, error) {
		if len(chain) > 0 && revoked.Revoked(chain[0]) {
			return nil, false, fmt.Errorf("the credential of %q was revoked", chain[0].Subject.CommonName)
		}
		return convert.User(chain)
	})
}

// rootHandler serves what is not under /clusters/.
func (s *Server) rootHandler() http.Handler {
	mux := http.NewServeMux()
	health := func(w http.ResponseWriter, r *http.Request) {
		if err := s.healthy(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	}
	mux.HandleFunc("/healthz", health)
	mux.HandleFunc("/livez", health)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-s.rootReady:
			health(w, r)
		default:
			http.Error(w, "the root heaven is starting", http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/version", func(w http.ResponseWriter, _ *http.Request) {
		responsewriters.WriteRawJSON(http.StatusOK, Version, w)
	})
	mux.Handle("/metrics", legacyregistry.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, r, apierrors.NewGenericServerResponse(http.StatusNotFound, r.Method, schema.GroupResource{}, "",
			fmt.Sprintf("heaven-server serves heavens under %s<name>; no such path %q", ClustersPrefix, r.URL.Path), 0, false))
	})
	return mux
}

// healthy checks that both stores answer.
func (s *Server) healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if s.repo != nil {
		if _, _, err := s.repo.Head(RootHeaven); err != nil {
			return fmt.Errorf("git store: %w", err)
		}
	}
	if _, err := s.etcd.client.KV.Get(ctx, probeKey); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	return nil
}
