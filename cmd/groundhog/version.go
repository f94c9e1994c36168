package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise it comes from the module's build info (go install …@v1.2.3).
var version = "dev"

func init() {
	rootCmd.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the groundhog version and the VCS revision it was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return nil
		},
	})
}

// versionLine is "groundhog <version> (<revision>[, modified], <go version>)"
// from the build info; fields the build did not record are left out.
func versionLine() string {
	v := version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "groundhog " + v
	}
	if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	rev, modified, when := "", false, ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		case "vcs.time":
			when = s.Value
		}
	}
	out := "groundhog " + v + " ("
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		out += "revision " + rev
		if modified {
			out += ", modified"
		}
		if when != "" {
			out += ", " + when
		}
		out += ", "
	}
	return out + bi.GoVersion + ")"
}
