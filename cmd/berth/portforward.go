package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/portforward"

	"github.com/berth-dev/berth/api"
)

// portForwarder is what `berth port-forward` needs beyond apiClient.
type portForwarder interface {
	// PortForward forwards the ports ("LOCAL:REMOTE", ":REMOTE" or
	// "PORT") on the addresses until ctx ends, saying on out where each
	// listens.
	PortForward(ctx context.Context, ns, name string, addresses, ports []string, out, errOut io.Writer) error
}

func newPortForwardCommand(g *globalOptions) *cobra.Command {
	var addresses []string
	cmd := &cobra.Command{
		Use:   "port-forward POD | TYPE/NAME [LOCAL_PORT:]REMOTE_PORT...",
		Short: "Forward local ports to a pod",
		Long: `Port-forward listens on local ports and forwards each connection to a
port of a pod, through the control plane and the pod's node's agent, as
kubectl port-forward does, until interrupted. LOCAL:REMOTE forwards LOCAL
to REMOTE, PORT the same port, and :REMOTE a free local port (printed).

Given a deployment, replicaset or replicationcontroller (deploy/NAME), it
forwards to one of its pods, as kubectl does.`,
		Example: `  berth port-forward deploy/web 8080:80
  berth port-forward pod/db :5432`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPortForward(cmd, g, addresses, args[0], args[1:])
		},
	}
	cmd.Flags().StringSliceVar(&addresses, "address", []string{"localhost"}, "addresses to listen on (comma-separated)")
	return cmd
}

func runPortForward(cmd *cobra.Command, g *globalOptions, addresses []string, arg string, ports []string) error {
	kind, name, err := podTarget("port-forward", arg)
	if err != nil {
		return err
	}
	for _, p := range ports {
		if err := checkPortSpec(p); err != nil {
			return err
		}
	}
	c, pod, err := connectPod(cmd, g, kind, name)
	if err != nil {
		return err
	}
	ctx, stderr := cmd.Context(), cmd.ErrOrStderr()
	if pod.Status.Phase != api.PodRunning {
		fmt.Fprintf(stderr, "error: unable to forward port because pod is not running. Current status=%s\n", pod.Status.Phase)
		return reportedFailure()
	}
	pf, ok := c.(portForwarder)
	if !ok {
		return failed(errors.New("this client cannot forward ports"))
	}
	if err := pf.PortForward(ctx, g.namespace, pod.Name, addresses, ports, cmd.OutOrStdout(), stderr); err != nil && ctx.Err() == nil {
		fmt.Fprintln(stderr, errorMessage(err))
		return reportedFailure()
	}
	return nil
}

// checkPortSpec checks a port argument as kubectl reads it.
func checkPortSpec(spec string) error {
	local, remote, two := strings.Cut(spec, ":")
	if !two {
		remote = local
	}
	if _, err := strconv.ParseUint(remote, 10, 16); err != nil || remote == "0" {
		return usageErrorf("invalid port %q: the remote port must be a number from 1 to 65535", spec)
	}
	if two && local != "" {
		if _, err := strconv.ParseUint(local, 10, 16); err != nil {
			return usageErrorf("invalid port %q: the local port must be a number from 0 to 65535", spec)
		}
	}
	return nil
}

// PortForward forwards through pods/portforward with Kubernetes' own
// port-forward client, SPDY tunnelled in a WebSocket.
func (a *clientAPI) PortForward(ctx context.Context, ns, name string, addresses, ports []string, out, errOut io.Writer) error {
	u, err := url.Parse(a.podURL(ns, name, "portforward"))
	if err != nil {
		return err
	}
	dialer, err := portforward.NewSPDYOverWebsocketDialer(u, a.restConfig())
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	defer context.AfterFunc(ctx, func() { close(stop) })()
	fw, err := portforward.NewOnAddresses(dialer, addresses, ports, stop, nil, out, errOut)
	if err != nil {
		return err
	}
	return fw.ForwardPorts()
}
