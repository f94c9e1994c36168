package sqlite

func batchWrites(db *DB) int64  { return db.ops.writes.Load() }
func batchCommits(db *DB) int64 { return db.ops.commits.Load() }
