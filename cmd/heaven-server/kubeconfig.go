package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/heaven-dev/heaven/pkg/pki"
	"github.com/heaven-dev/heaven/pkg/server"
)

// KubeconfigOptions are the flags of "heaven-server kubeconfig".
type KubeconfigOptions struct {
	User         string
	Groups       []string
	Heaven       string
	DataDir      string
	ExternalHost string
	SecurePort   int
	ValidFor     time.Duration
	Output       string
}

// NewKubeconfigOptions returns the defaults, those of heaven-server.
func NewKubeconfigOptions() *KubeconfigOptions {
	s := server.NewOptions()
	return &KubeconfigOptions{DataDir: s.DataDir, ExternalHost: s.BindAddress, SecurePort: s.SecurePort, ValidFor: 365 * 24 * time.Hour}
}

// AddFlags registers the options' flags.
func (o *KubeconfigOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.User, "user", o.User, "User name the credential authenticates as (the certificate's CN). Required.")
	fs.StringSliceVar(&o.Groups, "groups", o.Groups, "Groups of the user (the certificate's O). "+server.AdministratorsGroup+" and system:masters make a server administrator.")
	fs.StringVar(&o.Heaven, "heaven", o.Heaven, "Heaven the kubeconfig's context points at (https://HOST:PORT/clusters/<heaven>). Required. What the user may do there is the heaven's RBAC's.")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "heaven-server's data directory: the CA in <data-dir>/pki issues the credential.")
	fs.StringVar(&o.ExternalHost, "external-hostname", o.ExternalHost, "Host name or IP of heaven-server, as its serving certificate holds it.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "heaven-server's HTTPS port.")
	fs.DurationVar(&o.ValidFor, "valid-for", o.ValidFor, "How long the client certificate is valid.")
	fs.StringVarP(&o.Output, "output", "o", o.Output, "File to write the kubeconfig to (mode 0600); empty: standard output.")
}

// Validate returns every problem of the options.
func (o *KubeconfigOptions) Validate() []error {
	var errs []error
	if o.User == "" {
		errs = append(errs, errors.New("--user is required"))
	}
	if err := server.ValidateHeavenName(o.Heaven); err != nil {
		errs = append(errs, fmt.Errorf("--heaven: %w", err))
	}
	if o.ValidFor <= 0 {
		errs = append(errs, errors.New("--valid-for must be positive"))
	}
	return errs
}

// NewKubeconfigCommand is "heaven-server kubeconfig".
func NewKubeconfigCommand() *cobra.Command {
	o := NewKubeconfigOptions()
	cmd := &cobra.Command{
		Use:   "kubeconfig --user NAME [--groups G,...] --heaven HEAVEN",
		Short: "Print a kubeconfig for a user, with a client certificate from this server's CA, pointing at one heaven",
		Long: `kubeconfig hands out access: it issues a client certificate for --user (in
--groups) signed by the CA in <data-dir>/pki and prints a kubeconfig whose one
context points at https://<external-hostname>:<secure-port>/clusters/<heaven>.
What the user may do in a heaven is what that heaven's RBAC grants the user (and
its groups); server administrators (groups system:masters, heaven:admins) may do
everything everywhere.

  heaven-server kubeconfig --user alice --groups team-a-devs --heaven team-a -o alice.kubeconfig`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if errs := o.Validate(); len(errs) > 0 {
				return errors.Join(errs...)
			}
			data, err := o.kubeconfig()
			if err != nil {
				return err
			}
			if o.Output == "" {
				_, err = cmd.OutOrStdout().Write(data)
				return err
			}
			return os.WriteFile(o.Output, data, 0o600)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func (o *KubeconfigOptions) kubeconfig() ([]byte, error) {
	ca, err := pki.LoadCA(filepath.Join(o.DataDir, "pki"))
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.IssueClientCert(o.User, o.Groups, o.ValidFor)
	if err != nil {
		return nil, err
	}
	name := o.User + "@" + o.Heaven
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[o.Heaven] = &clientcmdapi.Cluster{
		Server:                   "https://" + net.JoinHostPort(o.ExternalHost, strconv.Itoa(o.SecurePort)) + server.ClustersPrefix + o.Heaven,
		CertificateAuthorityData: ca.CAPEM(),
	}
	cfg.AuthInfos[o.User] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: o.Heaven, AuthInfo: o.User}
	cfg.CurrentContext = name
	return clientcmd.Write(*cfg)
}
