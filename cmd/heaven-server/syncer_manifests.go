package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/pki"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/pkg/syncer/install"
)

// SyncerManifestsOptions are the flags of "heaven-server syncer-manifests".
type SyncerManifestsOptions struct {
	SyncTarget         string
	Heaven             string
	Resources          []string
	DataDir            string
	ExternalHost       string
	SecurePort         int
	SyncerImage        string
	CredentialValidity time.Duration
}

// NewSyncerManifestsOptions returns the defaults, those of heaven-server.
func NewSyncerManifestsOptions() *SyncerManifestsOptions {
	s := server.NewOptions()
	return &SyncerManifestsOptions{
		DataDir:            s.DataDir,
		ExternalHost:       s.BindAddress,
		SecurePort:         s.SecurePort,
		SyncerImage:        s.SyncerImage,
		CredentialValidity: 365 * 24 * time.Hour,
	}
}

// AddFlags registers the options' flags.
func (o *SyncerManifestsOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.SyncTarget, "sync-target", o.SyncTarget, "Name of the SyncTarget (in the root heaven) the syncer serves. Required.")
	fs.StringVar(&o.Heaven, "heaven", o.Heaven, "Heaven whose objects the syncer syncs (the SyncTarget's spec.heaven). Required.")
	fs.StringSliceVar(&o.Resources, "resources", o.Resources,
		"Resources to sync, each resource.group (core resources without a group), e.g. configmaps,deployments.apps: passed to the syncer, and all its ClusterRole grants besides namespaces, CRDs and discovery. List the SyncTarget's spec.resources here too.")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "heaven-server's data directory: the CA in <data-dir>/pki issues the syncer's credential.")
	fs.StringVar(&o.ExternalHost, "external-hostname", o.ExternalHost,
		"Host name or IP at which the syncer reaches heaven-server (heaven-server's --external-hostname, which its serving certificate holds).")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "heaven-server's HTTPS port.")
	fs.StringVar(&o.SyncerImage, "syncer-image", o.SyncerImage, "Container image of the syncer (make image builds "+install.DefaultImage+").")
	fs.DurationVar(&o.CredentialValidity, "credential-validity", o.CredentialValidity,
		"How long the syncer's client certificate is valid. Print and apply the manifests again before it expires.")
}

// Validate returns every problem of the options.
func (o *SyncerManifestsOptions) Validate() []error {
	var errs []error
	if msgs := validation.IsDNS1123Label(o.SyncTarget); len(msgs) > 0 || len(o.SyncTarget) > 56 {
		errs = append(errs, fmt.Errorf("--sync-target %q must be a DNS label of at most 56 characters", o.SyncTarget))
	}
	if err := server.ValidateHeavenName(o.Heaven); err != nil {
		errs = append(errs, fmt.Errorf("--heaven: %w", err))
	}
	for _, r := range o.Resources {
		if err := v1alpha1.ValidateResource(r); err != nil {
			errs = append(errs, fmt.Errorf("--resources: %w", err))
		}
	}
	if o.ExternalHost == "" {
		errs = append(errs, fmt.Errorf("--external-hostname must not be empty"))
	}
	if o.SecurePort <= 0 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d is not a port", o.SecurePort))
	}
	if o.SyncerImage == "" {
		errs = append(errs, fmt.Errorf("--syncer-image must not be empty"))
	}
	if o.CredentialValidity < time.Hour {
		errs = append(errs, fmt.Errorf("--credential-validity must be at least 1h"))
	}
	return errs
}

// Run issues the syncer's credential with the CA of --data-dir and writes
// the manifests to out.
func (o *SyncerManifestsOptions) Run(out io.Writer) error {
	ca, err := pki.LoadCA(filepath.Join(o.DataDir, "pki"))
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := ca.IssueClientCert(pki.SyncerUser(o.Heaven, o.SyncTarget), []string{pki.SyncerGroup}, o.CredentialValidity)
	if err != nil {
		return err
	}
	serverURL := "https://" + net.JoinHostPort(o.ExternalHost, strconv.Itoa(o.SecurePort))
	kubeconfig, err := install.Kubeconfig(serverURL, o.Heaven, ca.CAPEM(), certPEM, keyPEM)
	if err != nil {
		return err
	}
	m, err := install.Generate(install.Params{
		SyncTarget: o.SyncTarget, Heaven: o.Heaven, Resources: o.Resources, Image: o.SyncerImage, Kubeconfig: kubeconfig,
	})
	if err != nil {
		return err
	}
	data, err := m.YAML()
	if err != nil {
		return err
	}
	resources := "[]"
	if len(o.Resources) > 0 {
		resources = "[" + strings.Join(o.Resources, ", ") + "]"
	}
	_, err = fmt.Fprintf(out, `# The syncer of SyncTarget %[1]s for heaven %[2]s: kubectl apply -f this to the
# physical cluster. Its credential reaches only heaven %[2]s and SyncTarget %[1]s
# in root at %[3]s, and is valid for %[4]v. The SyncTarget goes into root:
#
#   apiVersion: heaven.dev/v1alpha1
#   kind: SyncTarget
#   metadata: {name: %[1]s}
#   spec: {heaven: %[2]s, resources: %[5]s}
#
%[6]s`, o.SyncTarget, o.Heaven, serverURL, o.CredentialValidity, resources, data)
	return err
}

// NewSyncerManifestsCommand is "heaven-server syncer-manifests".
func NewSyncerManifestsCommand() *cobra.Command {
	o := NewSyncerManifestsOptions()
	cmd := &cobra.Command{
		Use:   "syncer-manifests --sync-target NAME --heaven HEAVEN [--resources R,...]",
		Short: "Print the manifests that install a syncer in a physical cluster, for kubectl apply",
		Long: `Print the manifests that install the syncer of a SyncTarget in a physical
cluster: the same ones heaven-server's cluster controller applies for a
SyncTarget with spec.kubeconfigSecretRef. Use them where heaven-server cannot
reach the cluster:

  heaven-server syncer-manifests --sync-target east --heaven team-a \
    --resources configmaps,deployments.apps --external-hostname heaven.example.com \
    | kubectl --context east apply -f -

They are a Namespace heaven-syncer-<sync target>, a ServiceAccount, a
ClusterRole and ClusterRoleBinding granting the listed resources in every
namespace (plus namespaces, reading CRDs, discovery and OpenAPI), a Secret
with a kubeconfig for the heaven, and a Deployment running the syncer image.

The kubeconfig holds a new client certificate issued by the CA in
<data-dir>/pki, so run this where heaven-server keeps its data. The
certificate's user is heaven:syncer:<heaven>:<sync target>: heaven-server lets
it reach only /clusters/<heaven>/ and the SyncTarget in root.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if errs := o.Validate(); len(errs) > 0 {
				return errors.Join(errs...)
			}
			return o.Run(cmd.OutOrStdout())
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}
