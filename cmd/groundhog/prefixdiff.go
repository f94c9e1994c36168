package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/promptcache"
)

// Exit statuses of prefix-diff.
const (
	diffMatch    = 0
	diffDiverge  = 1
	diffBadInput = 2
)

func init() {
	var format, shape string
	cmd := &cobra.Command{
		Use:   "prefix-diff A.json B.json",
		Short: "Show where and why the prompt prefix of request B stops reusing request A's",
		Long: `Compare two provider request bodies (chat, responses, messages or embeddings; the
shape is inferred, or set with --shape) the way the provider's prompt cache does:
A is the earlier request, taken as cached; B the later one. Prints the break cause,
the tokens B can reuse, the JSON path and token offset of the first divergence,
both values with context (the differing part highlighted on a terminal) and a
one-line fix. Cache markers (cache_control, prompt_cache_breakpoint) are ignored:
they do not change the cached bytes.

Exit status: 0 when the prefixes match (B continues A), 1 when they diverge,
2 on bad input.`,
		Example: `  groundhog prefix-diff turn1.json turn2.json
  groundhog prefix-diff --format json a.json b.json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			code := prefixDiff(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, format, shape, isTerminal(cmd.OutOrStdout()))
			if code != diffMatch {
				os.Exit(code)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	cmd.Flags().StringVar(&shape, "shape", "", "API shape of both bodies (chat, responses, messages, embeddings); inferred when empty")
	rootCmd.AddCommand(cmd)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// prefixDiff runs the command and returns its exit status.
func prefixDiff(stdout, stderr io.Writer, args []string, format, shape string, color bool) int {
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "groundhog prefix-diff: "+format+"\n", a...)
		return diffBadInput
	}
	if len(args) != 2 {
		return bad("want two request bodies, A.json and B.json (got %d arguments)", len(args))
	}
	if format != "text" && format != "json" {
		return bad("--format must be text or json, not %q", format)
	}
	var bodies [2][]byte
	for i, name := range args {
		b, err := os.ReadFile(name)
		if err != nil {
			return bad("%v", err)
		}
		bodies[i] = b
	}
	sh := groundhog.Shape(shape)
	if shape == "" {
		var err error
		if sh, err = promptcache.GuessShape(bodies[0]); err != nil {
			return bad("%s: %v", args[0], err)
		}
	} else if !sh.Valid() {
		return bad("unknown --shape %q", shape)
	}
	res, err := promptcache.Diff(sh, bodies[0], bodies[1])
	if err != nil {
		return bad("%v", err)
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.Encode(res)
	} else {
		printDiff(stdout, res, color)
	}
	if res.Match {
		return diffMatch
	}
	return diffDiverge
}

func printDiff(w io.Writer, r *promptcache.DiffResult, color bool) {
	if r.NotApplicable {
		fmt.Fprintln(w, "not applicable: embeddings have no prompt prefix")
		return
	}
	cause := string(r.Cause)
	if cause == "" {
		cause = "none (prefixes match)"
	}
	if r.Pattern != "" {
		cause += " (" + r.Pattern + ")"
	}
	fmt.Fprintf(w, "cause:           %s\n", cause)
	fmt.Fprintf(w, "reusable tokens: %d\n", r.ReusableTokens)
	if !r.Match {
		fmt.Fprintf(w, "first divergence: %s (token %d)\n", r.Path, r.TokenOffset)
		fmt.Fprintf(w, "  A: %s\n", highlight(r.A, r.DiffA, color))
		fmt.Fprintf(w, "  B: %s\n", highlight(r.B, r.DiffB, color))
	}
	fmt.Fprintf(w, "fix:             %s\n", r.Advice)
}

// highlight marks s[d[0]:d[1]] in reverse video when color is on.
func highlight(s string, d [2]int, color bool) string {
	if !color || d[0] < 0 || d[1] > len(s) || d[0] >= d[1] {
		return s
	}
	return s[:d[0]] + "\x1b[7m" + s[d[0]:d[1]] + "\x1b[0m" + s[d[1]:]
}
