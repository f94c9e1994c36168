// Package ledger is groundhog's duplicate-work ledger: the Writer that
// makes a row for every call durable without slowing the call down, the
// daily report computed from those rows (BuildReport), and the same report
// computed offline from a request log that never went through groundhog
// (Analyze).
//
// The report's definitions are written once, on Row, and implemented once,
// in Accumulator: BuildReport and Analyze both feed it ledger rows, so the
// live and the offline figures cannot drift apart.
package ledger
