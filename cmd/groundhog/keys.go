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
			db, err := lf.openExistingStore(cmd)
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
		Short: "Revoke a gateway key by its ID or an unambiguous prefix of it (as `keys list` shows it); a running gateway stops accepting it within 10 seconds",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := rf.openExistingStore(cmd)
			if err != nil {
				return err
			}
			defer db.Close()
			ks, err := db.ListKeys(cmd.Context())
			if err != nil {
				return err
			}
			id, err := revokeTarget(ks, strings.TrimSuffix(args[0], "…"))
			if err != nil {
				return err
			}
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

// revokeTarget resolves what the user typed to revoke to exactly one key's
// ID: the ID itself, or a prefix of exactly one key's ID. Several keys
// matching (a prefix, or keys created before IDs had 16 hex digits that
// share one) is refused rather than revoking more than the user meant. A
// key declared in the configuration file is refused too: it would be back
// at the next start, so the message says to remove it from the file.
func revokeTarget(ks []groundhog.APIKey, arg string) (string, error) {
	if arg == "" {
		return "", fmt.Errorf("empty key ID")
	}
	var match []groundhog.APIKey
	for _, k := range ks {
		if k.ID == arg || strings.HasPrefix(k.ID, arg) {
			match = append(match, k)
		}
	}
	switch {
	case len(match) == 0:
		return "", groundhog.Errorf(groundhog.ENOTFOUND, "no key with id %q (see `groundhog keys list`)", arg)
	case len(match) > 1:
		ids := make([]string, 0, len(match))
		for _, k := range match {
			ids = append(ids, k.ID+"… ("+k.Tenant+")")
		}
		return "", fmt.Errorf("key id %q is ambiguous: it matches %d keys: %s; nothing revoked. Give more of the id (`groundhog keys list`)", arg, len(match), strings.Join(ids, ", "))
	}
	k := match[0]
	if strings.HasPrefix(k.ID, groundhog.ConfigKeyIDPrefix) {
		return "", fmt.Errorf("key %s… (tenant %q) is declared in the configuration file: revoking it here would last only until the next start. Remove its line (sha256: %s…) from the config file's keys and restart the gateway", k.ID, k.Tenant, k.Hash[:16])
	}
	return k.ID, nil
}
