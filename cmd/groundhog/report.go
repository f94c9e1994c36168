package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
	_ "time/tzdata" // --tz must work where the OS has no zoneinfo (containers)

	"github.com/spf13/cobra"

	"github.com/groundhog-ai/groundhog/ledger"
)

func init() {
	var (
		cf                  configFlags
		day, tenant, op, tz string
		format, by          string
		rebuild             bool
	)
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Print the duplicate-work report of one day from the ledger",
		Long: `Print, per operation and in total, how much of one day's model work repeated
earlier work: calls, distinct request hashes, repeats (calls whose hash was seen
earlier that day), their share and cost, concurrent identical calls (arrived while
an identical call was in flight), cache hits, coalesced and replayed calls,
upstream calls, spend, saved, shadow savings (what an exact cache plus coalescing
would have saved where the cache is off) and the 30-day projection of the savings.

Calls whose model has no price are left out of the USD figures and counted apart.

A second table shows what the provider's prompt cache did: cached-read, cache-write
(and 1-hour write) and uncached input tokens, the hit ratio, the net saving (what
the reads saved minus what the writes cost above the input rate; negative when
caching lost money), calls held by warm-then-fan-out, and the breaks in prefix
reuse by cause with an example request hash each.

With --by session, one row per agent run (the Groundhog-Session header of its
calls), subagents under their parent (Groundhog-Parent-Session): model and tool
calls, spend, saved, repeats and their spend, the waste ratio (repeat spend ÷
spend), prompt-cache reads and breaks, duplicate tool calls avoided and suspected,
own and for the whole subagent tree.`,
		Example: `  groundhog report --day yesterday
  groundhog report --db /var/lib/groundhog.db --day 2025-03-14 --tz Europe/Paris --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := cf.load(cmd)
			if err != nil {
				return err
			}
			loc, err := loadZone(tz)
			if err != nil {
				return err
			}
			d, err := ledger.ParseDay(day, loc, time.Now())
			if err != nil {
				return err
			}
			if err := checkFormat(format); err != nil {
				return err
			}
			switch by {
			case "", "operation":
			case "session":
				if format == "csv" {
					return fmt.Errorf("--by session: use --format table or json")
				}
			default:
				return fmt.Errorf("--by %q: use operation or session", by)
			}
			// sqlite.Open would create an empty database: a typo in --db
			// must not print an empty report.
			if err := databaseExists(cfg); err != nil {
				return err
			}
			db, err := openDatabase(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer db.Close()
			// A gateway running on this database may hold answered calls in
			// its journal that it has not committed yet: read them first
			// (then the store), so the report includes every answered call.
			journal := cfg.Ledger.JournalDir
			if journal == "" {
				journal = defaultJournalDir(cfg) // where serve keeps it
			}
			if rebuild {
				if err := rebuildRollups(cmd.Context(), db, d, loc); err != nil {
					return err
				}
			}
			pending, err := ledger.ReadJournal(journal)
			if err != nil {
				return err
			}
			if by == "session" {
				sr, err := ledger.BuildSessionReport(cmd.Context(), ledger.WithPending(db, pending), ledger.ReportParams{Day: d, Location: loc, Tenant: tenant}, "")
				if err != nil {
					return err
				}
				if format == "json" {
					return sr.WriteJSON(cmd.OutOrStdout())
				}
				return sr.WriteTable(cmd.OutOrStdout())
			}
			rep, err := ledger.BuildReport(cmd.Context(), ledger.WithPending(db, pending), ledger.ReportParams{Day: d, Location: loc, Tenant: tenant, Operation: op})
			if err != nil {
				return err
			}
			return writeReports(cmd.OutOrStdout(), format, []*ledger.Report{rep}, false)
		},
	}
	fs := cmd.Flags()
	addConfigFlags(fs, &cf)
	fs.StringVar(&day, "day", "today", "day to report: YYYY-MM-DD, today or yesterday (in --tz)")
	fs.StringVar(&tenant, "tenant", "", "only this tenant")
	fs.StringVar(&op, "operation", "", "only this operation")
	fs.StringVar(&tz, "tz", "UTC", `time zone of the day boundaries (IANA name such as Europe/Paris, or "Local")`)
	fs.StringVar(&format, "format", "table", "output format: table, json or csv")
	fs.StringVar(&by, "by", "operation", "rows per operation, or per agent run and subagent tree (session: the Groundhog-Session header; table or json)")
	fs.BoolVar(&rebuild, "rebuild-rollups", false, "PostgreSQL: first recompute the day's rollups from its rows (after rows were loaded around the gateway, or appended by replicas older than migration 0005)")
	rootCmd.AddCommand(cmd)
}

// rebuildRollups recomputes the rollups of the UTC days the report day
// touches, when the store keeps rollups (PostgreSQL).
func rebuildRollups(ctx context.Context, db any, d time.Time, loc *time.Location) error {
	r, ok := db.(interface {
		RebuildLedgerRollup(context.Context, time.Time) error
	})
	if !ok {
		return fmt.Errorf("--rebuild-rollups: this database keeps no rollups (SQLite reports by scanning)")
	}
	start, end := ledger.DayBounds(d, loc)
	for t := start.UTC().Truncate(24 * time.Hour); t.Before(end); t = t.Add(24 * time.Hour) {
		if err := r.RebuildLedgerRollup(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// loadZone resolves --tz.
func loadZone(name string) (*time.Location, error) {
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("--tz %q: unknown time zone (use an IANA name such as Europe/Paris, UTC or Local)", name)
	}
	return loc, nil
}

func checkFormat(f string) error {
	switch f {
	case "table", "json", "csv":
		return nil
	}
	return fmt.Errorf("--format %q: use table, json or csv", f)
}

// writeReports prints reports in format. many selects the multi-day forms:
// a JSON array (one object per day) instead of a single object.
func writeReports(w io.Writer, format string, reps []*ledger.Report, many bool) error {
	switch format {
	case "json":
		if many {
			return ledger.WriteJSONReports(w, reps)
		}
		return reps[0].WriteJSON(w)
	case "csv":
		return ledger.WriteCSVReports(w, reps)
	}
	var b strings.Builder
	for i, r := range reps {
		if i > 0 {
			b.WriteString("\n")
		}
		if err := r.WriteTable(&b); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
