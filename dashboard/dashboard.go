// Package dashboard serves the duplicate-work report over HTTP: the JSON/CSV
// report endpoint (GET /groundhog/v1/report) and the web dashboard
// (GET /groundhog/), a server-rendered HTML page with inline SVG charts that
// needs no JavaScript and loads no external asset.
//
// Both are tenant-scoped: the tenant comes only from Options.Auth (the
// gateway's authenticate), never from the request's parameters, and every
// figure is computed by ledger.BuildReport for that tenant, so the dashboard
// and the report cannot disagree.
package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/wire"
)

// ReportPath is where the gateway mounts ReportHandler. The dashboard links
// to it (JSON and CSV downloads of the day it shows).
const ReportPath = "/groundhog/v1/report"

// DefaultDays is how many days the dashboard charts when Options.Days is 0.
const DefaultDays = 14

// maxDays bounds Options.Days: each day is one scan of the ledger.
const maxDays = 366

// Options configure a Dashboard.
type Options struct {
	// Store is the ledger the reports are computed from. Required.
	Store groundhog.LedgerStore
	// Auth maps a request to its tenant: the gateway's authenticate. Its
	// errors carry codes groundhog.EUNAUTHORIZED (answered 401) or
	// groundhog.EUNAVAILABLE (503). An empty tenant with a nil error is
	// refused (500): an empty tenant would select every tenant's rows.
	// Required.
	Auth func(*http.Request) (tenant string, err error)
	// Clock decides what "today" and "yesterday" are. Default the wall clock.
	Clock groundhog.Clock
	// Location sets the day boundaries when a request passes no ?tz=.
	// Default time.UTC.
	Location *time.Location
	// Days is how many days the dashboard charts, ending with the day shown
	// (today by default). Default DefaultDays; at most 366.
	Days int
	// Logger receives internal errors (store failures), which clients only
	// see as a generic message. Default slog.Default().
	Logger *slog.Logger
}

// Dashboard serves the report endpoint and the dashboard page. Create it
// with New; its handlers are safe for concurrent use.
type Dashboard struct {
	o Options
}

// New returns a Dashboard for o, filling in the defaults documented on
// Options. It panics if o.Store or o.Auth is nil (a wiring error).
func New(o Options) *Dashboard {
	if o.Store == nil || o.Auth == nil {
		panic("dashboard: Options.Store and Options.Auth are required")
	}
	if o.Clock == nil {
		o.Clock = groundhog.SystemClock{}
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	if o.Days <= 0 {
		o.Days = DefaultDays
	}
	if o.Days > maxDays {
		o.Days = maxDays
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Dashboard{o: o}
}

// codeMethod is the code of a wrong HTTP method (405).
const codeMethod = wire.CodeMethod

// errorType is the OpenAI error "type" for a status.
func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// clientError returns the status and the client-safe message of err. An
// error without a code (or with EINTERNAL) is logged and answered with a
// generic message: internal detail never reaches the client.
func (d *Dashboard) clientError(r *http.Request, err error) (int, string) {
	code := groundhog.ErrorCode(err)
	status := statusFor(code)
	msg := groundhog.ErrorMessage(err)
	if status >= 500 {
		d.o.Logger.Warn("dashboard: request failed", "path", r.URL.Path, "status", status, "err", err)
		if code == groundhog.EINTERNAL {
			msg = "internal error"
		}
	}
	return status, msg
}

// writeJSONError answers err as {"error":{"type":…,"message":…}}, the
// gateway's error shape for non-Anthropic routes.
func (d *Dashboard) writeJSONError(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := d.clientError(r, err)
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"type": errorType(status), "message": msg}})
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusMethodNotAllowed {
		h.Set("Allow", "GET, HEAD")
	}
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="groundhog"`)
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// authenticate runs Options.Auth. A browser cannot send a Bearer token from
// the address bar, so HTTP Basic credentials are accepted too: the gateway
// key as the password (or, with an empty password, as the user name) is
// passed to Auth as "Authorization: Bearer <key>". This is the same secret
// in another header, not another way in; any other scheme reaches Auth
// unchanged.
func (d *Dashboard) authenticate(r *http.Request) (string, error) {
	if user, pass, ok := r.BasicAuth(); ok {
		key := pass
		if key == "" {
			key = user
		}
		r2 := r.Clone(r.Context())
		r2.Header.Set("Authorization", "Bearer "+key)
		r = r2
	}
	tenant, err := d.o.Auth(r)
	if err != nil {
		return "", err
	}
	if tenant == "" {
		// Fail closed: an empty tenant in ReportParams means every tenant.
		return "", groundhog.WrapError(groundhog.EINTERNAL, "", fmt.Errorf("dashboard: Auth returned an empty tenant"))
	}
	return tenant, nil
}

// checkMethod accepts GET and HEAD (HEAD is GET without the body).
func checkMethod(r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return groundhog.Errorf(codeMethod, "method %s not allowed: use GET", r.Method)
	}
	return nil
}

// query parses the query string and refuses parameters outside allowed and
// repeated ones: a misspelt parameter (?tennant=, ?dya=) must not silently
// fall back to a default and show other numbers than the caller asked for.
func query(r *http.Request, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, groundhog.Errorf(groundhog.EINVALID, "malformed query string")
	}
	for k, vs := range q {
		ok := false
		for _, a := range allowed {
			if k == a {
				ok = true
				break
			}
		}
		if !ok {
			return nil, groundhog.Errorf(groundhog.EINVALID, "unknown query parameter %q (allowed: %s)", k, strings.Join(allowed, ", "))
		}
		if len(vs) > 1 {
			return nil, groundhog.Errorf(groundhog.EINVALID, "query parameter %q given %d times", k, len(vs))
		}
	}
	return q, nil
}

// location returns the zone named by ?tz=, or the default when absent.
func (d *Dashboard) location(q url.Values) (*time.Location, error) {
	if _, ok := q["tz"]; !ok {
		return d.o.Location, nil
	}
	name := q.Get("tz")
	// "" and "Local" would be the server's own zone, which the caller cannot
	// know; LoadLocation already refuses paths ("/", "..").
	if name == "" || name == "Local" {
		return nil, groundhog.Errorf(groundhog.EINVALID, "invalid tz %q: want an IANA zone such as Europe/Paris or UTC", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, groundhog.Errorf(groundhog.EINVALID, "invalid tz %q: want an IANA zone such as Europe/Paris or UTC", name)
	}
	return loc, nil
}

// day parses ?day= (default today) with ledger.ParseDay and keeps it within
// the years the stores can represent.
func (d *Dashboard) day(q url.Values, loc *time.Location) (time.Time, error) {
	s, ok := q["day"]
	v := ""
	if ok {
		v = s[0]
		if strings.TrimSpace(v) == "" {
			return time.Time{}, groundhog.Errorf(groundhog.EINVALID, "empty day: want YYYY-MM-DD, today or yesterday")
		}
	}
	t, err := ledger.ParseDay(v, loc, d.o.Clock.Now())
	if err != nil {
		return time.Time{}, err
	}
	// Ledger times are stored as int64 nanoseconds (years 1678–2262).
	if y := t.Year(); y < 1970 || y > 2200 {
		return time.Time{}, groundhog.Errorf(groundhog.EINVALID, "day %q out of range (1970–2200)", v)
	}
	return t, nil
}

// ReportHandler serves GET /groundhog/v1/report?day=YYYY-MM-DD|today|yesterday
// [&operation=O][&tz=Zone][&format=json|csv]: the report of one day for the
// caller's tenant, in the JSON of (*ledger.Report).WriteJSON (default) or
// the CSV of WriteCSV. day defaults to today in tz (default
// Options.Location).
//
// Errors are JSON {"error":{"type":…,"message":…}}: 401 when Auth fails
// with EUNAUTHORIZED, 503 with EUNAVAILABLE (or when the store is
// unavailable), 405 for a method other than GET/HEAD, 400 for a bad day,
// tz or format, an unknown or repeated query parameter. Authentication runs
// first, so an unauthenticated caller learns nothing about the parameters.
func (d *Dashboard) ReportHandler() http.Handler {
	return http.HandlerFunc(d.serveReport)
}

func (d *Dashboard) serveReport(w http.ResponseWriter, r *http.Request) {
	tenant, err := d.authenticate(r)
	if err != nil {
		d.writeJSONError(w, r, err)
		return
	}
	if err := checkMethod(r); err != nil {
		d.writeJSONError(w, r, err)
		return
	}
	q, err := query(r, "day", "operation", "tz", "format")
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
	format := q.Get("format")
	switch format {
	case "", "json", "csv":
	default:
		d.writeJSONError(w, r, groundhog.Errorf(groundhog.EINVALID, "invalid format %q: want json or csv", format))
		return
	}
	rep, err := ledger.BuildReport(r.Context(), d.o.Store, ledger.ReportParams{
		Day: day, Location: loc, Tenant: tenant, Operation: q.Get("operation"),
	})
	if err != nil {
		d.writeJSONError(w, r, err)
		return
	}
	var buf bytes.Buffer
	h := w.Header()
	if format == "csv" {
		err = rep.WriteCSV(&buf)
		h.Set("Content-Type", "text/csv; charset=utf-8")
		h.Set("Content-Disposition", `inline; filename="groundhog-report-`+rep.Day+`.csv"`)
	} else {
		err = rep.WriteJSON(&buf)
		h.Set("Content-Type", "application/json")
	}
	if err != nil {
		d.writeJSONError(w, r, fmt.Errorf("dashboard: encode report: %w", err))
		return
	}
	// Tenant data behind a key: no shared cache may keep it.
	h.Set("Cache-Control", "private, no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// statusFor maps an error code to its HTTP status: wire.Status is the one
// mapping.
func statusFor(code string) int { return wire.Status(code) }
