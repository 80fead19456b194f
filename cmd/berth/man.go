package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// newManCommand writes a manual page per command, generated from the
// command tree as the completions are, so that the packages install pages
// that cannot drift from --help. It is hidden: a packaging step, like
// kubectl's and gh's documentation generators, not an everyday command.
func newManCommand(g *globalOptions) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "man --dir DIR",
		Short: "Write berth's manual pages (section 1) into a directory",
		Long: `Write one troff manual page per command (berth.1, berth-get.1, …) into
DIR, creating it. The pages carry the build's date, else $SOURCE_DATE_EPOCH,
else today's, so that a release build is reproducible.`,
		Example: `  berth man --dir /usr/local/share/man/man1 && mandb -q`,
		Hidden:  true,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return usageErrorf("--dir is required")
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			root := cmd.Root()
			prepareForMan(root, map[*pflag.Flag]bool{})
			header := &doc.GenManHeader{
				Title:   "BERTH",
				Section: "1",
				Source:  "berth " + version,
				Manual:  "berth Manual",
				Date:    buildDate(),
			}
			if err := doc.GenManTree(root, header, dir); err != nil {
				return fmt.Errorf("write manual pages to %s: %w", dir, err)
			}
			g.logger.Debug("manual pages written", "dir", dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory to write the pages into")
	return cmd
}

// prepareForMan readies the command tree, which the process leaves at
// once, for the generator: it drops the generator's footer from every
// page (the pages are berth's own), and escapes the texts it reads as
// Markdown, where a placeholder such as <data dir> or a default such as
// memory.available<100Mi would be taken for HTML and vanish, and the
// underscores of KUBERNETES_SERVICE_PORT would turn to emphasis. A flag
// the commands inherit is escaped once.
func prepareForMan(cmd *cobra.Command, seen map[*pflag.Flag]bool) {
	cmd.DisableAutoGenTag = true
	cmd.Long = escapeMarkdown(cmd.Long)
	escape := func(f *pflag.Flag) {
		if seen[f] {
			return
		}
		seen[f] = true
		f.Usage = escapeMarkdown(f.Usage)
		if f.Value.Type() == "string" {
			// The generator quotes a string's default itself, which would
			// quote the escapes too: quote it here, then escape.
			f.DefValue = strconv.Quote(f.DefValue)
			f.Value = quotedValue{f.Value}
		}
		f.DefValue = escapeMarkdown(f.DefValue)
	}
	cmd.LocalFlags().VisitAll(escape)
	cmd.InheritedFlags().VisitAll(escape)
	for _, c := range cmd.Commands() {
		prepareForMan(c, seen)
	}
}

// quotedValue is a string flag whose default is quoted already, which the
// generator then prints as it is.
type quotedValue struct{ pflag.Value }

func (quotedValue) Type() string { return "quoted string" }

// markdownEscaper escapes what Markdown would take for markup within a
// line: HTML, emphasis, code and links.
var markdownEscaper = strings.NewReplacer(`\`, `\\`, "<", `\<`, ">", `\>`, "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`)

// escapeMarkdown escapes the text lines of s; indented lines are code
// blocks to Markdown, which shows them as they are.
func escapeMarkdown(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "    ") {
			continue
		}
		lines[i] = markdownEscaper.Replace(l)
	}
	return strings.Join(lines, "\n")
}

// buildDate is the commit date a release build was given, or nil (the
// generator then reads $SOURCE_DATE_EPOCH, else the clock).
func buildDate() *time.Time {
	t, err := time.Parse(time.RFC3339, date)
	if err != nil {
		return nil
	}
	return &t
}
