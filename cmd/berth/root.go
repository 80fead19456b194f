package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/client"
)

// globalOptions are the flags every command takes (SPEC §1) and what the
// root command sets up from them before a command runs.
type globalOptions struct {
	kubeconfig string
	// server, when set, is the URL (or the comma-separated URLs) of the
	// cluster's servers in place of the kubeconfig's.
	server string
	// requestTimeout bounds a request and its tries on other servers
	// (--request-timeout); 0 is none.
	requestTimeout requestTimeout
	namespace      string
	verbose        bool
	logFormat      string

	logger *slog.Logger
	// started is set when a command's RunE begins: cobra checks flags,
	// arguments and required flags before that, so an error from before is
	// bad usage.
	started bool
}

// newRootCommand builds the command tree. Subcommands must not define a
// PersistentPreRunE: cobra would run theirs instead of the root's.
func newRootCommand(stdin io.Reader, stdout, stderr io.Writer) (*cobra.Command, *globalOptions) {
	g := &globalOptions{logger: slog.New(slog.DiscardHandler)}
	root := &cobra.Command{
		Use:   "berth",
		Short: "A single-binary GitOps orchestrator modelled on Kubernetes",
		Long: `berth turns a Git repository, a directory or a URL of Kubernetes-style
manifests into running workloads on a fleet of machines.

` + kubeconfigHelp,
		Version:       versionLine(),
		SilenceErrors: true,
		SilenceUsage:  true,
		// cobra's `completion bash|zsh|fish|powershell` is listed: the
		// packages install its output, and a `go install` user needs to
		// find it.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return g.setup(cmd.ErrOrStderr())
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("{{.Version}}\n")

	f := root.PersistentFlags()
	f.StringVar(&g.kubeconfig, "kubeconfig", "", "kubeconfig of the control plane (default $"+envKubeconfig+", else $"+envKubectlConfig+", else <data dir>/"+kubeconfigFileName+" if it exists, else ~/.kube/config)")
	f.StringVar(&g.server, "server", "", "URL of the cluster's server, or the URLs of its servers separated by commas (tried in turn), in place of the kubeconfig's; the credentials are still the kubeconfig's")
	g.requestTimeout = requestTimeout(client.DefaultTimeout)
	f.Var(&g.requestTimeout, "request-timeout", "how long a request may take, with its tries again on a 503 or 429 and on the other servers; a duration (10s, 1m) or seconds, 0 for no limit")
	f.StringVarP(&g.namespace, "namespace", "n", "default", "namespace of the objects")
	f.BoolVarP(&g.verbose, "verbose", "v", false, "log debug messages")
	f.StringVar(&g.logFormat, "log-format", "text", "format of the logs on stderr: text or json")

	root.AddCommand(
		newVersionCommand(g),
		newValidateCommand(g),
		newGetCommand(g),
		newDescribeCommand(g),
		newApplyCommand(g),
		newDeleteCommand(g),
		newServerCommand(g),
		newAgentCommand(g),
		newReconcileCommand(g),
		newSuspendCommand(g),
		newResumeCommand(g),
		newTreeCommand(g),
		newRolloutCommand(g),
		newDiffCommand(g),
		newPlanCommand(g),
		newSimCommand(g),
		newToolboxCommand(g),
		newLogsCommand(g),
		newExecCommand(g),
		newAttachCommand(g),
		newTopCommand(g),
		newPortForwardCommand(g),
		newManCommand(g),
		newSnapshotCommand(g),
		newTokenCommand(),
		newImagesCommand(g),
	)
	requireSubcommand(root)
	markStart(root, g)
	return root, g
}

// requireSubcommand makes every command below the root that only groups
// others (rollout, reconcile) refuse a word that names none of them, as
// cobra refuses an unknown command of the root: bad usage, exit 2. Cobra
// on its own prints the help of such a group and ends well, since a
// command without a Run never checks its arguments. Named alone, the
// group still prints its help.
func requireSubcommand(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		if c.HasSubCommands() && !c.Runnable() {
			c.Args = cobra.NoArgs
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
		requireSubcommand(c)
	}
}

// markStart makes every command record that it started running.
func markStart(cmd *cobra.Command, g *globalOptions) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			g.started = true
			return run(cmd, args)
		}
	}
	for _, c := range cmd.Commands() {
		markStart(c, g)
	}
}

// setup checks the global flags and builds the logger.
func (g *globalOptions) setup(stderr io.Writer) error {
	level := slog.LevelInfo
	if g.verbose {
		level = slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: level}
	switch g.logFormat {
	case "text":
		g.logger = slog.New(slog.NewTextHandler(stderr, opts))
	case "json":
		g.logger = slog.New(slog.NewJSONHandler(stderr, opts))
	default:
		return usageErrorf("--log-format must be text or json, not %q", g.logFormat)
	}
	return nil
}

// defaultDataDir is the server's data directory (SPEC §2): /var/lib/berth
// as root, else $XDG_DATA_HOME/berth, else ~/.local/share/berth.
func defaultDataDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/berth"
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "berth")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "berth")
	}
	return filepath.Join(".berth")
}
