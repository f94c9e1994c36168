package distcoalesce_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/distcoalesce"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/redis"
	"github.com/groundhog-ai/groundhog/sqlite"
	"github.com/groundhog-ai/groundhog/storetest"
)

// heldUpstream is an OpenAI-shaped provider whose first call streams two
// events, says so on started, and holds the rest of its stream until
// release is closed. Later calls stream at once; their text is "again".
type heldUpstream struct {
	calls   atomic.Int32
	started chan struct{}
	release chan struct{}
	tail    string // the first call's third event's content
}

func newHeldUpstream(t *testing.T, tail string) (*heldUpstream, string) {
	u := &heldUpstream{started: make(chan struct{}, 1), release: make(chan struct{}), tail: tail}
	srv := httptest.NewServer(u)
	t.Cleanup(srv.Close)
	t.Cleanup(u.open) // first: a held call must end before the server can close
	return u, srv.URL + "/v1"
}

func (u *heldUpstream) open() {
	select {
	case <-u.release:
	default:
		close(u.release)
	}
}

func chunk(content string) string {
	return fmt.Sprintf(`{"id":"chatcmpl-live","object":"chat.completion.chunk","created":1,"model":"sim-small","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`, content)
}

func (u *heldUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := u.calls.Add(1)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	send := func(data string) {
		fmt.Fprintf(w, "data: %s\n\n", data)
		w.(http.Flusher).Flush()
	}
	first, tail := "Hello", u.tail
	if n > 1 {
		first, tail = "again", "again"
	}
	send(chunk(first))
	send(chunk(" world"))
	if n == 1 {
		u.started <- struct{}{}
		select {
		case <-u.release:
		case <-r.Context().Done():
			return
		}
	}
	send(chunk(tail))
	send(`{"id":"chatcmpl-live","object":"chat.completion.chunk","created":1,"model":"sim-small","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	send(`{"id":"chatcmpl-live","object":"chat.completion.chunk","created":1,"model":"sim-small","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":300,"total_tokens":1300}}`)
	send("[DONE]")
}

// gw is one replica: a gateway Server with its own Redis connections,
// cache, distcoalesce Group and SQLite (keys, ledger).
type gw struct {
	url string
	db  *redis.DB
	g   *distcoalesce.Group
	lw  *ledger.Writer
	sq  *sqlite.DB
}

func gateways(t *testing.T, upstream string, lease time.Duration, live ...distcoalesce.LiveOptions) ([]*gw, string) {
	t.Helper()
	url := storetest.RedisURL(t)
	prefix := "ghtest:" + groundhog.NewID()[:12] + ":"
	var out []*gw
	for _, lo := range live {
		db, err := redis.Open(ctx, url, redis.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		cfg := config.Default()
		dir := t.TempDir()
		cfg.DB = filepath.Join(dir, "g.db")
		if err := cfg.Finish(); err != nil {
			t.Fatal(err)
		}
		sq, err := sqlite.Open(ctx, cfg.DB)
		if err != nil {
			t.Fatal(err)
		}
		c, err := cache.New(cache.Options{Store: db})
		if err != nil {
			t.Fatal(err)
		}
		lw, err := ledger.OpenWriter(ctx, sq, ledger.WriterOptions{JournalDir: filepath.Join(dir, "journal")})
		if err != nil {
			t.Fatal(err)
		}
		log := slog.New(slog.DiscardHandler)
		g := distcoalesce.New(distcoalesce.Options{Client: db.Client(), Prefix: prefix, Waker: db, Lease: lease, MaxWait: time.Minute, Live: lo, Logger: log})
		up := gateway.Upstream{BaseURL: upstream, Provider: "sim"}
		s := gateway.New(gateway.Options{Config: &cfg, Keys: sq, Cache: c, Ledger: lw, OpenAI: up, Anthropic: up, Logger: log, Keyless: true, Flights: g})
		srv := httptest.NewServer(s)
		t.Cleanup(func() {
			srv.Close()
			_ = lw.Close(context.Background())
			_ = sq.Close()
			db.Close()
		})
		out = append(out, &gw{url: srv.URL, db: db, g: g, lw: lw, sq: sq})
	}
	t.Cleanup(func() {
		c := goredis.NewClient(mustParse(t, url))
		defer c.Close()
		if keys, _ := c.Keys(ctx, prefix+"*").Result(); len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
	return out, prefix
}

func mustParse(t *testing.T, url string) *goredis.Options {
	o, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

const liveBody = `{"model":"sim-small","stream":true,"messages":[{"role":"user","content":"live across replicas"}]}`

// client is one streaming call: its response (once the head arrived) and
// everything it read.
type client struct {
	head chan *http.Response // the response, once its head arrived
	read chan string         // the body read so far, after each read
	body chan []byte         // the whole body once it ended (EOF or a broken connection)
	err  chan error
}

func stream(url, body string) *client {
	c := &client{head: make(chan *http.Response, 1), read: make(chan string, 1000), body: make(chan []byte, 1), err: make(chan error, 1)}
	go func() {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Groundhog-Cache", "use")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			c.err <- err
			c.body <- nil
			return
		}
		defer res.Body.Close()
		c.head <- res
		var all bytes.Buffer
		br := bufio.NewReader(res.Body)
		buf := make([]byte, 4096)
		for {
			n, err := br.Read(buf)
			all.Write(buf[:n])
			if n > 0 {
				select {
				case c.read <- all.String():
				default:
				}
			}
			if err != nil {
				if err != io.EOF {
					c.err <- err
				}
				c.body <- all.Bytes()
				return
			}
		}
	}()
	return c
}

// failsafe bounds a wait that must end: a test that hangs fails instead
// (not a timing assertion: the expected wait is milliseconds).
const failsafe = 30 * time.Second

// until returns once the client's body contains s.
func (c *client) until(t *testing.T, s, why string) {
	t.Helper()
	timeout := time.After(failsafe)
	for {
		select {
		case got := <-c.read:
			if strings.Contains(got, s) {
				return
			}
		case <-timeout:
			t.Fatalf("%s: the client never received %q", why, s)
		}
	}
}

func (c *client) whole(t *testing.T) []byte {
	t.Helper()
	select {
	case b := <-c.body:
		return b
	case <-time.After(failsafe):
		t.Fatal("the call never ended")
		return nil
	}
}

func (c *client) response(t *testing.T) *http.Response {
	t.Helper()
	select {
	case r := <-c.head:
		return r
	case err := <-c.err:
		t.Fatal(err)
	case <-time.After(failsafe):
		t.Fatal("no response head")
	}
	return nil
}

func waiting(g *distcoalesce.Group) {
	for g.Stats().Waiting == 0 {
		runtime.Gosched()
	}
}

// A streaming call on another replica receives the leader's events while
// the provider is still streaming, its own whole stream is byte-identical
// to the leader's, it is accounted as a coalesced follower, and the
// provider is called once.
func TestLiveFollowerOnAnotherReplicaReceivesTheStreamAsItArrives(t *testing.T) {
	up, upURL := newHeldUpstream(t, "!")
	rs, _ := gateways(t, upURL, 10*time.Second, distcoalesce.LiveOptions{}, distcoalesce.LiveOptions{})
	t.Cleanup(up.open) // before the gateways close: their flights wait for the provider
	a, b := rs[0], rs[1]

	leader := stream(a.url, liveBody)
	<-up.started
	leader.until(t, `" world"`, "leader")
	follower := stream(b.url, liveBody)
	follower.until(t, `" world"`, "follower on the other replica, while the provider still holds its stream")
	up.open()
	lb, fb := leader.whole(t), follower.whole(t)
	if !bytes.Contains(lb, []byte("data: [DONE]")) || !bytes.Equal(lb, fb) {
		t.Fatalf("the follower's stream differs from the leader's:\nleader:   %q\nfollower: %q", lb, fb)
	}
	lr, fr := leader.response(t), follower.response(t)
	if got := fr.Header.Get("Groundhog-Cache"); got != "coalesced" {
		t.Errorf("follower: Groundhog-Cache = %q, want coalesced", got)
	}
	if lr.Trailer.Get("Groundhog-Cost-USD") == "" || fr.Trailer.Get("Groundhog-Saved-USD") != lr.Trailer.Get("Groundhog-Cost-USD") || fr.Trailer.Get("Groundhog-Cost-USD") != "0.000000" {
		t.Errorf("trailers: leader cost %q; follower cost %q, saved %q; want the follower to save the leader's cost at cost 0",
			lr.Trailer.Get("Groundhog-Cost-USD"), fr.Trailer.Get("Groundhog-Cost-USD"), fr.Trailer.Get("Groundhog-Saved-USD"))
	}
	if n := up.calls.Load(); n != 1 {
		t.Errorf("the provider was called %d times, want 1", n)
	}
	if st := b.g.Stats(); st.LiveFollowed != 1 || st.Shared != 1 {
		t.Errorf("follower's replica: %+v, want LiveFollowed 1, Shared 1", st)
	}
	row := onlyRow(t, b)
	if row.Outcome != groundhog.OutcomeCoalesced || !row.InFlight || row.Cost != 0 || !row.Saved.Known() || row.Saved != onlyRow(t, a).Cost || row.Saved == 0 {
		t.Errorf("follower's row: outcome %s, in flight %v, cost %d, saved %d; want coalesced, true, 0, the leader's cost %d",
			row.Outcome, row.InFlight, row.Cost, row.Saved, onlyRow(t, a).Cost)
	}
}

func onlyRow(t *testing.T, r *gw) groundhog.LedgerEntry {
	t.Helper()
	if err := r.lw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var rows []groundhog.LedgerEntry
	err := r.sq.ScanLedger(ctx, groundhog.LedgerFilter{From: time.Unix(0, 0), To: time.Now().Add(time.Hour)}, func(e *groundhog.LedgerEntry) error {
		rows = append(rows, *e)
		return nil
	})
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows (%v), want 1", len(rows), err)
	}
	return rows[0]
}

// An event over the entry bound abandons the live relay after the
// follower has published the first events: it then serves the rest from
// the stored result, and its client still gets the exact stream.
func TestAbandonedLiveStreamFallsBackToTheStoredResult(t *testing.T) {
	up, upURL := newHeldUpstream(t, strings.Repeat("x", 2000))
	rs, _ := gateways(t, upURL, 10*time.Second, distcoalesce.LiveOptions{MaxEntryBytes: 1000}, distcoalesce.LiveOptions{})
	t.Cleanup(up.open) // before the gateways close: their flights wait for the provider
	a, b := rs[0], rs[1]

	leader := stream(a.url, liveBody)
	<-up.started
	follower := stream(b.url, liveBody)
	follower.until(t, `" world"`, "follower, live before the large event")
	up.open()
	lb, fb := leader.whole(t), follower.whole(t)
	if !bytes.Contains(lb, []byte("data: [DONE]")) || !bytes.Equal(lb, fb) {
		t.Fatalf("the follower's stream differs from the leader's:\nleader:   %q\nfollower: %q", lb, fb)
	}
	if st := a.g.Stats(); st.Abandoned != 1 {
		t.Errorf("leader's replica: %+v, want Abandoned 1 (the large event)", st)
	}
	if st := b.g.Stats(); st.LiveFollowed != 0 || st.Shared != 1 {
		t.Errorf("follower's replica: %+v, want the stored result (LiveFollowed 0, Shared 1)", st)
	}
	if n := up.calls.Load(); n != 1 {
		t.Errorf("the provider was called %d times, want 1", n)
	}
}

// A follower that finds the start of the stream trimmed away waits for the
// stored result and still gets the exact stream.
func TestTrimmedLiveStreamFallsBackToTheStoredResult(t *testing.T) {
	up, upURL := newHeldUpstream(t, "!")
	rs, prefix := gateways(t, upURL, 10*time.Second, distcoalesce.LiveOptions{}, distcoalesce.LiveOptions{})
	t.Cleanup(up.open) // before the gateways close: their flights wait for the provider
	a, b := rs[0], rs[1]

	leader := stream(a.url, liveBody)
	<-up.started
	leader.until(t, `" world"`, "leader")
	// The leader's stream holds the head and two events: trim it to the
	// last one, as MAXLEN does to a long stream.
	rc := a.db.Client()
	var key string
	for end := time.Now().Add(failsafe); key == ""; {
		if time.Now().After(end) {
			t.Fatal("the leader never wrote its head and first two events to a stream")
		}
		keys, err := rc.Keys(ctx, prefix+"s:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 1 {
			if n, _ := rc.XLen(ctx, keys[0]).Result(); n == 3 {
				key = keys[0]
			}
		}
		runtime.Gosched()
	}
	if err := rc.XTrimMaxLen(ctx, key, 1).Err(); err != nil {
		t.Fatal(err)
	}
	follower := stream(b.url, liveBody)
	waiting(b.g)
	up.open()
	lb, fb := leader.whole(t), follower.whole(t)
	if !bytes.Contains(lb, []byte("data: [DONE]")) || !bytes.Equal(lb, fb) {
		t.Fatalf("the follower's stream differs from the leader's:\nleader:   %q\nfollower: %q", lb, fb)
	}
	if st := b.g.Stats(); st.LiveFollowed != 0 || st.Shared != 1 {
		t.Errorf("follower's replica: %+v, want the stored result (LiveFollowed 0, Shared 1)", st)
	}
	if n := up.calls.Load(); n != 1 {
		t.Errorf("the provider was called %d times, want 1", n)
	}
}

// The leader's replica dies mid-stream (its Redis connections close: no
// more renewals, no end marker). The follower that relayed its first
// events cannot restart the call invisibly: its stream ends with an error
// event, once the claim has expired. A waiter that relayed nothing (live
// relay off on its replica) takes the call over and gets a whole stream.
func TestDeadLeaderMidStream(t *testing.T) {
	up, upURL := newHeldUpstream(t, "!")
	rs, _ := gateways(t, upURL, 600*time.Millisecond, distcoalesce.LiveOptions{}, distcoalesce.LiveOptions{}, distcoalesce.LiveOptions{Off: true})
	t.Cleanup(up.open) // before the gateways close: their flights wait for the provider
	a, b, c := rs[0], rs[1], rs[2]

	own := stream(a.url, liveBody)
	<-up.started
	relayed := stream(b.url, liveBody)
	relayed.until(t, `" world"`, "live follower")
	waiter := stream(c.url, liveBody)
	waiting(c.g)
	a.db.Close() // the leader's replica is gone for Redis

	rb := relayed.whole(t)
	if bytes.Contains(rb, []byte("[DONE]")) || !bytes.Contains(rb, []byte(`"error"`)) {
		t.Errorf("the live follower's stream = %q, want its first events and then an error event, no [DONE]", rb)
	}
	wb := waiter.whole(t)
	if !bytes.Contains(wb, []byte("data: [DONE]")) || !bytes.Contains(wb, []byte(`"again"`)) {
		t.Errorf("the waiter that relayed nothing got %q, want a whole stream of its own call", wb)
	}
	if st := c.g.Stats(); st.TookOver != 1 {
		t.Errorf("waiter's replica: %+v, want TookOver 1", st)
	}
	// The leader's process lives on without Redis: its own client, once
	// the provider goes on, gets its whole stream (publishing to Redis
	// never fails the leader's client).
	up.open()
	if ob := own.whole(t); !bytes.Contains(ob, []byte("data: [DONE]")) || !bytes.Contains(ob, []byte(`"Hello"`)) {
		t.Errorf("the leader's own client got %q, want its whole stream", ob)
	}
	if n := up.calls.Load(); n != 2 {
		t.Errorf("the provider was called %d times, want 2 (the dead leader's, the takeover's)", n)
	}
}
