package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// SeedState is the working state of the design's worked example, byte for byte: a
// store and the HTTP layer must give back exactly these bytes.
const SeedState = `{"objective":"Fix the webhook retry bug","constraints":["No duplicate charges","Rollback required"],"findings":["Worker may time out after downstream success"],"failed_approaches":["Blind retry duplicates the action"],"evidence":["src/webhooks.py","incident-1042"],"next_step":"Check downstream idempotency support"}`

// RunState runs the StateStore conformance suite. open is called once per
// subtest and must return an empty store of its own.
func RunState(t *testing.T, open func(t *testing.T) groundhog.StateStore) {
	for _, st := range stateTests {
		t.Run(st.name, func(t *testing.T) { st.fn(t, open(t)) })
	}
}

var stateTests = []struct {
	name string
	fn   func(t *testing.T, s groundhog.StateStore)
}{
	{"State/SeedRoundTrip", testStateSeedRoundTrip},
	{"State/ExactValues", testStateExactValues},
	{"State/CompareAndSwap", testStateCAS},
	{"State/ConcurrentSameExpect", testStateConcurrent},
	{"State/Versions", testStateVersions},
	{"State/VersionInfoPages", testStateVersionInfos},
	{"State/Tombstone", testStateTombstone},
	{"State/TenantIsolation", testStateTenants},
}

func seed(t *testing.T) groundhog.WorkingState {
	t.Helper()
	var s groundhog.WorkingState
	must(t, json.Unmarshal([]byte(SeedState), &s), "decode seed")
	return s
}

func put(t *testing.T, s groundhog.StateStore, tenant, session string, st groundhog.WorkingState, expect int64, d time.Duration) *groundhog.StateVersion {
	t.Helper()
	v, err := s.PutState(ctx, groundhog.StateVersion{Tenant: tenant, Session: session, State: st, Author: "key_" + tenant, CreatedAt: at(d)}, expect)
	must(t, err, fmt.Sprintf("PutState(%s, %s, expect %d)", tenant, session, expect))
	return v
}

func testStateSeedRoundTrip(t *testing.T, s groundhog.StateStore) {
	stored := put(t, s, "t1", "sess-1", seed(t), 0, 0)
	if stored.Version != 1 || !timeEq(stored.CreatedAt, t0) || stored.Deleted {
		t.Fatalf("PutState returned version %d at %v deleted %v, want 1 at %v", stored.Version, stored.CreatedAt, stored.Deleted, t0)
	}
	got, err := s.GetState(ctx, "t1", "sess-1")
	must(t, err, "GetState")
	b, err := json.Marshal(got.State)
	must(t, err, "marshal")
	if string(b) != SeedState {
		t.Fatalf("seed round trip:\n got %s\nwant %s", b, SeedState)
	}
	if got.Version != 1 || got.Author != "key_t1" || !timeEq(got.CreatedAt, t0) || got.Tenant != "t1" || got.Session != "sess-1" {
		t.Fatalf("GetState = %+v", got)
	}
}

// testStateExactValues stores values a lossy encoding would change: HTML
// characters, trailing spaces, unicode, an empty vs a nil list, raw ext.
func testStateExactValues(t *testing.T, s groundhog.StateStore) {
	st := groundhog.WorkingState{
		Objective:   "a <b> & \"c\"  \u2028 é\t",
		Constraints: []string{"  leading and trailing  ", "", "ünïcødé 😀", "line\nbreak"},
		Findings:    []string{},
		Evidence:    []string{"ev_" + string(bytes.Repeat([]byte("ab"), 32))},
		Ext:         json.RawMessage(`{"b":1,"a":[true,null],"html":"<x>"}`),
	}
	put(t, s, "t1", "exact", st, 0, time.Nanosecond)
	got, err := s.GetState(ctx, "t1", "exact")
	must(t, err, "GetState")
	if !reflect.DeepEqual(got.State, st) {
		t.Fatalf("state changed in the store:\n got %#v\nwant %#v", got.State, st)
	}
	if got.State.Findings == nil || got.State.FailedApproaches != nil {
		t.Fatalf("empty and nil lists not kept apart: findings %#v, failed %#v", got.State.Findings, got.State.FailedApproaches)
	}
	if !timeEq(got.CreatedAt, at(time.Nanosecond)) {
		t.Fatalf("CreatedAt = %v, want %v (to the nanosecond)", got.CreatedAt, at(time.Nanosecond))
	}
}

func testStateCAS(t *testing.T, s groundhog.StateStore) {
	if _, err := s.GetState(ctx, "t1", "cas"); !groundhog.IsNotFound(err) {
		t.Fatalf("GetState of an empty session: %v, want ENOTFOUND", err)
	}
	v1 := seed(t)
	put(t, s, "t1", "cas", v1, 0, 0)
	v2 := v1
	v2.NextStep = "second"
	for _, expect := range []int64{0, 2, 7} {
		_, err := s.PutState(ctx, groundhog.StateVersion{Tenant: "t1", Session: "cas", State: v2, Author: "x"}, expect)
		wantCode(t, err, groundhog.EPRECONDITION, fmt.Sprintf("PutState expect %d with newest 1", expect))
	}
	_, err := s.PutState(ctx, groundhog.StateVersion{Tenant: "t1", Session: "cas", State: v2, Author: "x"}, -1)
	wantCode(t, err, groundhog.EINVALID, "PutState expect -1")
	if got := put(t, s, "t1", "cas", v2, 1, time.Second); got.Version != 2 {
		t.Fatalf("second put: version %d, want 2", got.Version)
	}
	got, err := s.GetState(ctx, "t1", "cas")
	must(t, err, "GetState")
	if got.Version != 2 || got.State.NextStep != "second" {
		t.Fatalf("newest = version %d next_step %q, want 2 \"second\"", got.Version, got.State.NextStep)
	}
	vs, err := s.ListStateVersions(ctx, "t1", "cas")
	must(t, err, "ListStateVersions")
	if len(vs) != 2 {
		t.Fatalf("%d versions after 4 refused puts, want 2", len(vs))
	}
}

// testStateConcurrent races writers that all expect version 1: exactly one
// stores version 2, the rest get EPRECONDITION, and its content is the
// winner's.
func testStateConcurrent(t *testing.T, s groundhog.StateStore) {
	put(t, s, "t1", "race", seed(t), 0, 0)
	const n = 16
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make([]error, n)
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := seed(t)
			st.NextStep = fmt.Sprintf("writer %d", i)
			<-start
			_, errs[i] = s.PutState(ctx, groundhog.StateVersion{Tenant: "t1", Session: "race", State: st, Author: fmt.Sprint(i)}, 1)
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch groundhog.ErrorCode(err) {
		case "":
			if winner >= 0 {
				t.Fatalf("writers %d and %d both won", winner, i)
			}
			winner = i
		case groundhog.EPRECONDITION:
		default:
			t.Fatalf("writer %d: %v, want success or EPRECONDITION", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer won")
	}
	got, err := s.GetState(ctx, "t1", "race")
	must(t, err, "GetState")
	if got.Version != 2 || got.State.NextStep != fmt.Sprintf("writer %d", winner) || got.Author != fmt.Sprint(winner) {
		t.Fatalf("newest = version %d %q by %q, want 2 by writer %d", got.Version, got.State.NextStep, got.Author, winner)
	}
}

func testStateVersions(t *testing.T, s groundhog.StateStore) {
	for i := range 5 {
		st := seed(t)
		st.Findings = append(st.Findings, fmt.Sprintf("finding %d", i+1))
		put(t, s, "t1", "vers", st, int64(i), time.Duration(i)*time.Minute)
	}
	vs, err := s.ListStateVersions(ctx, "t1", "vers")
	must(t, err, "ListStateVersions")
	if len(vs) != 5 {
		t.Fatalf("%d versions, want 5", len(vs))
	}
	for i, v := range vs {
		want := int64(5 - i)
		if v.Version != want || !timeEq(v.CreatedAt, at(time.Duration(want-1)*time.Minute)) || v.Author != "key_t1" {
			t.Fatalf("versions[%d] = version %d at %v by %q, want %d (newest first)", i, v.Version, v.CreatedAt, v.Author, want)
		}
		if last := v.State.Findings[len(v.State.Findings)-1]; last != fmt.Sprintf("finding %d", want) {
			t.Fatalf("version %d holds %q", v.Version, last)
		}
		one, err := s.GetStateVersion(ctx, "t1", "vers", want)
		must(t, err, "GetStateVersion")
		if !reflect.DeepEqual(one.State, v.State) || one.Version != want {
			t.Fatalf("GetStateVersion(%d) differs from the list", want)
		}
	}
	for _, n := range []int64{0, 6, -1} {
		_, err := s.GetStateVersion(ctx, "t1", "vers", n)
		wantCode(t, err, groundhog.ENOTFOUND, fmt.Sprintf("GetStateVersion(%d)", n))
	}
	vs, err = s.ListStateVersions(ctx, "t1", "none")
	must(t, err, "ListStateVersions of an unknown session")
	if len(vs) != 0 {
		t.Fatalf("unknown session has %d versions", len(vs))
	}
}

func testStateTombstone(t *testing.T, s groundhog.StateStore) {
	put(t, s, "t1", "del", seed(t), 0, 0)
	tomb, err := s.PutState(ctx, groundhog.StateVersion{Tenant: "t1", Session: "del", Deleted: true, State: seed(t), Author: "deleter", CreatedAt: at(time.Second)}, 1)
	must(t, err, "PutState tombstone")
	if tomb.Version != 2 || !tomb.Deleted {
		t.Fatalf("tombstone = %+v", tomb)
	}
	got, err := s.GetState(ctx, "t1", "del")
	must(t, err, "GetState after delete")
	if !got.Deleted || got.Version != 2 || got.Author != "deleter" || !reflect.DeepEqual(got.State, groundhog.WorkingState{}) {
		t.Fatalf("GetState after delete = %+v, want the empty tombstone version 2", got)
	}
	old, err := s.GetStateVersion(ctx, "t1", "del", 1)
	must(t, err, "GetStateVersion(1) after delete")
	if old.Deleted || old.State.Objective != seed(t).Objective {
		t.Fatalf("version 1 after delete = %+v", old)
	}
	again := put(t, s, "t1", "del", seed(t), 2, 2*time.Second)
	if again.Version != 3 {
		t.Fatalf("re-create after delete: version %d, want 3", again.Version)
	}
}

func testStateTenants(t *testing.T, s groundhog.StateStore) {
	put(t, s, "t1", "shared", seed(t), 0, 0)
	if _, err := s.GetState(ctx, "t2", "shared"); !groundhog.IsNotFound(err) {
		t.Fatalf("t2 sees t1's session: %v", err)
	}
	if _, err := s.GetStateVersion(ctx, "t2", "shared", 1); !groundhog.IsNotFound(err) {
		t.Fatalf("t2 reads t1's version: %v", err)
	}
	if vs, err := s.ListStateVersions(ctx, "t2", "shared"); err != nil || len(vs) != 0 {
		t.Fatalf("t2 lists t1's versions: %d, %v", len(vs), err)
	}
	_, err := s.PutState(ctx, groundhog.StateVersion{Tenant: "t2", Session: "shared", State: seed(t), Author: "b"}, 1)
	wantCode(t, err, groundhog.EPRECONDITION, "t2 updating t1's version")
	other := seed(t)
	other.Objective = "t2's own"
	if v := put(t, s, "t2", "shared", other, 0, 0); v.Version != 1 {
		t.Fatalf("t2's first version is %d", v.Version)
	}
	got, err := s.GetState(ctx, "t1", "shared")
	must(t, err, "GetState t1")
	if got.State.Objective != seed(t).Objective || got.Version != 1 {
		t.Fatalf("t2's write changed t1's state: %+v", got)
	}
}

// testStateVersionInfos pages through 7 versions (one a tombstone) 3 at a
// time: every version once, newest first, metadata equal to the full
// listing's; another tenant sees none.
func testStateVersionInfos(t *testing.T, s groundhog.StateStore) {
	for i := range 6 {
		put(t, s, "t1", "pages", seed(t), int64(i), time.Duration(i)*time.Minute)
	}
	_, err := s.PutState(ctx, groundhog.StateVersion{Tenant: "t1", Session: "pages", Deleted: true, State: seed(t), Author: "deleter", CreatedAt: at(time.Hour)}, 6)
	must(t, err, "PutState tombstone")
	full, err := s.ListStateVersions(ctx, "t1", "pages")
	must(t, err, "ListStateVersions")
	var got []groundhog.StateVersionInfo
	before := int64(0)
	for range 4 {
		page, err := s.StateVersionInfos(ctx, "t1", "pages", before, 3)
		must(t, err, "StateVersionInfos")
		if len(page) > 3 {
			t.Fatalf("page of %d versions, limit 3", len(page))
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		before = page[len(page)-1].Version
	}
	if len(got) != len(full) || len(got) != 7 {
		t.Fatalf("pages hold %d versions, the full listing %d, want 7", len(got), len(full))
	}
	for i, v := range got {
		f := full[i]
		if v.Version != f.Version || v.Deleted != f.Deleted || v.Author != f.Author || !timeEq(v.CreatedAt, f.CreatedAt) {
			t.Fatalf("page entry %d = %+v, full listing has version %d deleted=%v by %q at %v", i, v, f.Version, f.Deleted, f.Author, f.CreatedAt)
		}
	}
	if !got[0].Deleted || got[0].Version != 7 || got[6].Version != 1 {
		t.Fatalf("newest first with the tombstone on top: %+v", got)
	}
	if vs, err := s.StateVersionInfos(ctx, "t2", "pages", 0, 10); err != nil || len(vs) != 0 {
		t.Fatalf("t2 lists t1's versions: %d, %v", len(vs), err)
	}
}
