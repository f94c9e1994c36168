package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
)

func init() {
	keys := &cobra.Command{Use: "keys", Short: "Manage gateway keys (stored hashed)"}

	var cf configFlags
	var tenant string
	create := &cobra.Command{
		Use:   "create --tenant NAME",
		Short: "Create a gateway key for a tenant; the key is printed once and only its hash is stored",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !config.ValidOperationName(tenant) {
				return fmt.Errorf("--tenant must be 1–128 characters of letters, digits and . _ - : /")
			}
			db, err := cf.openStore(cmd)
			if err != nil {
				return err
			}
			defer db.Close()
			secret, k := groundhog.NewAPIKey(tenant, time.Now())
			if err := db.CreateKey(cmd.Context(), k); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), secret)
			fmt.Fprintf(cmd.ErrOrStderr(), "created key %s… for tenant %q; it is shown only now: store it safely\n", k.ID, tenant)
			fmt.Fprintf(cmd.ErrOrStderr(), "to declare it in a configuration file instead:\n  keys:\n    - {tenant: %s, sha256: %s}\n", tenant, k.Hash)
			return nil
		},
	}
	addConfigFlags(create.Flags(), &cf)
	create.Flags().StringVar(&tenant, "tenant", "", "tenant the key authenticates as (required)")
	_ = create.MarkFlagRequired("tenant")

	var lf configFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List gateway keys (ids and tenants, never secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := lf.openStore(cmd)
			if err != nil {
				return err
			}
			defer db.Close()
			ks, err := db.ListKeys(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTENANT\tCREATED")
			for _, k := range ks {
				fmt.Fprintf(tw, "%s…\t%s\t%s\n", k.ID, k.Tenant, k.CreatedAt.UTC().Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	addConfigFlags(list.Flags(), &lf)

	var rf configFlags
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a gateway key by its ID (as `keys list` shows it); a running gateway stops accepting it within 10 seconds",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := rf.openStore(cmd)
			if err != nil {
				return err
			}
			defer db.Close()
			id := strings.TrimSuffix(args[0], "…")
			n, err := db.DeleteKey(cmd.Context(), id)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %d key(s) with id %s\n", n, id)
			return nil
		},
	}
	addConfigFlags(revoke.Flags(), &rf)
	keys.AddCommand(create, list, revoke)
	rootCmd.AddCommand(keys)
}
