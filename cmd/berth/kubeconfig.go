package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"

	"github.com/berth-dev/berth/client"
)

// Where the client finds its kubeconfig when no flag names one.
const (
	envKubeconfig      = "BERTH_KUBECONFIG"
	envKubectlConfig   = clientcmd.RecommendedConfigPathEnvVar // KUBECONFIG
	kubeconfigFileName = "admin.kubeconfig"
)

// kubeconfigHelp is the order kubeconfigFiles follows, as --help says it.
const kubeconfigHelp = `Which kubeconfig berth reads, first match wins:
  1. --kubeconfig FILE
  2. $BERTH_KUBECONFIG (one file)
  3. $KUBECONFIG: a list of files separated by ':', merged as kubectl merges
     them (the first file to set a value wins; files that do not exist are
     skipped)
  4. <data dir>/admin.kubeconfig, when it exists: what 'berth server' wrote on
     this machine (the data dir is /var/lib/berth as root, else
     $XDG_DATA_HOME/berth or ~/.local/share/berth)
  5. ~/.kube/config
The current context's cluster and user are used; the user authenticates
with a token (token or tokenFile), as admin.kubeconfig does.`

// kubeconfigChoice is where the client reads its kubeconfig: one file
// (explicit: it must exist), or $KUBECONFIG's list, merged by client-go's
// loading rules exactly as kubectl merges it.
type kubeconfigChoice struct {
	files    []string
	explicit bool
	// from says where the choice came from, for errors.
	from string
}

// String is the file, or the list as $KUBECONFIG spells it.
func (c kubeconfigChoice) String() string {
	return strings.Join(c.files, string(os.PathListSeparator))
}

// kubeconfigFiles resolves the kubeconfig in the order kubeconfigHelp
// gives: kubectl's (flag, $KUBECONFIG, ~/.kube/config), with berth's own
// variable after the flag and the local server's admin.kubeconfig before
// ~/.kube/config, as k3s's kubectl prefers the k3s.yaml of the server on
// its machine: `berth get` on the server's machine talks to that server,
// not to whatever cluster ~/.kube/config names.
func (g *globalOptions) kubeconfigFiles() kubeconfigChoice {
	if g.kubeconfig != "" {
		return kubeconfigChoice{files: []string{g.kubeconfig}, explicit: true, from: "--kubeconfig"}
	}
	if p := os.Getenv(envKubeconfig); p != "" {
		return kubeconfigChoice{files: []string{p}, explicit: true, from: "$" + envKubeconfig}
	}
	if list := os.Getenv(envKubectlConfig); list != "" {
		var files []string
		for _, f := range filepath.SplitList(list) {
			if f != "" {
				files = append(files, f)
			}
		}
		if len(files) > 0 {
			return kubeconfigChoice{files: files, from: "$" + envKubectlConfig}
		}
	}
	admin := filepath.Join(defaultDataDir(), kubeconfigFileName)
	if _, err := os.Stat(admin); err == nil {
		return kubeconfigChoice{files: []string{admin}, explicit: true, from: "the data dir"}
	}
	home := homeKubeconfig()
	if _, err := os.Stat(home); err == nil {
		return kubeconfigChoice{files: []string{home}, explicit: true, from: "the home directory"}
	}
	// Nothing found: name the server's file, which is what a user of one
	// machine is missing.
	return kubeconfigChoice{files: []string{admin}, explicit: true, from: "the default"}
}

// homeKubeconfig is kubectl's default, ~/.kube/config, found as client-go
// finds the home directory (read at each call: tests move $HOME).
func homeKubeconfig() string {
	return filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
}

// loadKubeconfig reads the chosen kubeconfig with client-go's loading
// rules and turns its current context into the client's Config.
func loadKubeconfig(c kubeconfigChoice) (*client.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{}
	if c.explicit {
		rules.ExplicitPath = c.files[0]
	} else {
		rules.Precedence = c.files
	}
	cfg, err := client.FromKubeconfig(clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}))
	if err != nil {
		if c.from == "the default" && errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no kubeconfig: none given (--kubeconfig, $%s, $%s), no %s and no %s; start `berth server` or name the server's admin.kubeconfig",
				envKubeconfig, envKubectlConfig, c.files[0], homeKubeconfig())
		}
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("kubeconfig %s (from %s): no configuration in it", c, c.from)
		}
		return nil, fmt.Errorf("kubeconfig %s (from %s): %w", c, c.from, err)
	}
	return cfg, nil
}
