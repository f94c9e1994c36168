package sqlite

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// StateVersionInfos returns one page of the metadata of (tenant, session)'s
// versions, newest first: at most limit versions older than before (0:
// from the newest). No state is read, so listing a long history of large
// states costs what the metadata costs.
func (db *DB) StateVersionInfos(ctx context.Context, tenant, session string, before int64, limit int) ([]groundhog.StateVersionInfo, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := db.r.QueryContext(ctx, `SELECT version, deleted, author, created_at FROM state_versions
		WHERE tenant = ? AND session = ? AND version < ? ORDER BY version DESC LIMIT ?`, tenant, session, before, limit)
	if err != nil {
		return nil, mapErr(fmt.Errorf("sqlite: list state versions: %w", err))
	}
	defer rows.Close()
	var out []groundhog.StateVersionInfo
	for rows.Next() {
		var (
			v       groundhog.StateVersionInfo
			deleted int
			created int64
		)
		if err := rows.Scan(&v.Version, &deleted, &v.Author, &created); err != nil {
			return nil, mapErr(fmt.Errorf("sqlite: list state versions: %w", err))
		}
		v.Deleted, v.CreatedAt = deleted != 0, time.Unix(0, created).UTC()
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(fmt.Errorf("sqlite: list state versions: %w", err))
	}
	return out, nil
}
