package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/groundhog-ai/groundhog/postgres"
)

// ledgerMaintenanceEvery is how often serve creates the PostgreSQL
// ledger's coming day partitions and drops those past the retention.
const ledgerMaintenanceEvery = time.Hour

// maintainLedger runs db.MaintainLedger at once and then every
// ledgerMaintenanceEvery until the returned function is called (which
// waits for a run in progress). Every replica runs it; the store serializes
// the runs with an advisory lock, so replicas never race.
func maintainLedger(db *postgres.DB, retention time.Duration, log *slog.Logger) func() error {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(ledgerMaintenanceEvery)
		defer t.Stop()
		for {
			dropped, err := db.MaintainLedger(ctx, time.Now(), retention)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				log.Warn("ledger partition maintenance failed; retrying in an hour", "err", err)
			case len(dropped) > 0:
				log.Info("ledger days past the retention dropped", "partitions", dropped, "retention", retention)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() error {
		cancel()
		<-stopped
		return nil
	}
}

// ledgerRetentionDesc is the startup description of the retention.
func ledgerRetentionDesc(retention time.Duration) string {
	if retention <= 0 {
		return ", ledger partitioned by day, kept forever"
	}
	return ", ledger partitioned by day, kept " + retention.String()
}
