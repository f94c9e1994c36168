package dashboard

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
)

// SessionReportPattern is where the gateway mounts SessionReportHandler.
const SessionReportPattern = "/groundhog/v1/sessions/{id}/report"

// SessionReportHandler serves GET /groundhog/v1/sessions/{id}/report
// [?day=YYYY-MM-DD|today|yesterday][&tz=Zone]: the agent run {id} of the
// caller's tenant and its subagent tree, in the JSON of
// (*ledger.SessionReport).WriteJSON. A run with no row that day in the
// caller's tenant (another tenant's run included) is a 404.
func (d *Dashboard) SessionReportHandler() http.Handler {
	return http.HandlerFunc(d.serveSessionReport)
}

func (d *Dashboard) serveSessionReport(w http.ResponseWriter, r *http.Request) {
	tenant, err := d.authenticate(r)
	if err != nil {
		d.writeJSONError(w, r, err)
		return
	}
	if err := checkMethod(r); err != nil {
		d.writeJSONError(w, r, err)
		return
	}
	id := r.PathValue("id")
	if !groundhog.ValidSessionID(id) {
		d.writeJSONError(w, r, groundhog.Errorf(groundhog.EINVALID, "session id must be 1-%d characters of A-Z a-z 0-9 . _ : -", groundhog.MaxSessionIDLen))
		return
	}
	q, err := query(r, "day", "tz")
	if err != nil {
		d.writeJSONError(w, r, err)
		return
	}
	loc, err := d.location(q)
	if err != nil {
		d.writeJSONError(w, r, err)
		return
	}
	day, err := d.day(q, loc)
	if err != nil {
		d.writeJSONError(w, r, err)
		return
	}
	rep, err := ledger.BuildSessionReport(r.Context(), d.o.Store, ledger.ReportParams{Day: day, Location: loc, Tenant: tenant}, id)
	if err != nil {
		d.writeJSONError(w, r, err)
		return
	}
	if len(rep.Runs) == 0 {
		d.writeJSONError(w, r, groundhog.Errorf(groundhog.ENOTFOUND, "no call of session %q on %s", id, rep.Day))
		return
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		d.writeJSONError(w, r, fmt.Errorf("dashboard: encode session report: %w", err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "private, no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}
