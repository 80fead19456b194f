package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-dev/berth/controlplane/pki"
)

func newTokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token create-user",
		Short: "Make credentials for users of the API",
	}
	cmd.AddCommand(newTokenCreateUserCommand())
	return cmd
}

func newTokenCreateUserCommand() *cobra.Command {
	var (
		dataDir string
		groups  []string
		ttl     time.Duration
		out     string
	)
	cmd := &cobra.Command{
		Use:   "create-user NAME [--group G]... [--ttl D] [-o FILE]",
		Short: "Write a kubeconfig for a user, with a client certificate the cluster CA signs",
		Long: `Create-user signs a client certificate for the user NAME with the cluster
CA of the server's data dir (it reads tls/ca.key there, so run it on the
server's machine) and writes a kubeconfig that uses it: the certificate's
common name is the user and its organizations the --group values, as
Kubernetes reads them. The user may do what RBAC bindings give it, to
the user or to one of its groups; nothing else. A certificate cannot be
revoked: remove the user's bindings to take its rights away.`,
		Example: `  berth token create-user jane --group devs --ttl 720h -o jane.kubeconfig
  kubectl create rolebinding jane-view --clusterrole=view --user=jane -n shop
  kubectl --kubeconfig jane.kubeconfig get pods -n shop`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := pki.UserKubeconfig(dataDir, args[0], groups, ttl, time.Now())
			if err != nil {
				return err
			}
			data, err := clientcmd.Write(*k)
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(data)
				return err
			}
			if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(out, data, 0o600); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s for user %s\n", out, args[0])
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", defaultDataDir(), "the server's data directory, which holds the cluster CA")
	f.StringArrayVar(&groups, "group", nil, "a group of the user (repeat for several)")
	f.DurationVar(&ttl, "ttl", 30*24*time.Hour, "how long the certificate is good for (at most a year)")
	f.StringVarP(&out, "output", "o", "", "the kubeconfig file to write (stdout when empty or -)")
	return cmd
}
