package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/client"
	"github.com/groundhog-ai/groundhog/contextapi"
	"github.com/groundhog-ai/groundhog/sim"
)

// Options configure one run.
type Options struct {
	GatewayURL  string
	Key         string
	Session     string
	Steps       int
	FlushLedger func(context.Context) error // in process: make the report current
}

// Summary is what a run measured.
type Summary struct {
	Steps             int
	SentInputTokens   int64 // what the assembled requests carried (the provider's count)
	FullInputTokens   int64 // what re-sending the whole transcript would have carried
	Refunds           int   // side effects actually performed
	RefundAttempts    int   // tool calls attempted (retries included)
	CacheHits         int   // lookups answered from groundhog's response cache
	Compactions       int
	LastDecision      string // the compaction decision of the last step
	FinalVersion      int64
	ConstraintsIntact bool
	Report            json.RawMessage
}

var (
	objective   = "Fix the webhook retry bug"
	constraints = []string{"No duplicate charges", "Rollback required", "Never email the customer before the refund is confirmed"}
)

const (
	model        = "sim-small"
	instructions = "You are a payments engineer working on the webhook service. Work one step at a time; keep to every constraint."
	logLines     = 4000
)

var tools = []json.RawMessage{
	json.RawMessage(`{"type":"function","function":{"name":"read_log","description":"Read lines of the incident log","parameters":{"type":"object","properties":{"from":{"type":"integer"},"to":{"type":"integer"}}}}}`),
	json.RawMessage(`{"type":"function","function":{"name":"refund","description":"Refund a charge","parameters":{"type":"object","properties":{"charge":{"type":"string"}}}}}`),
}

// Run drives the agent loop and returns its figures; progress lines go
// to out.
func Run(ctx context.Context, o Options, out io.Writer) (*Summary, error) {
	c := client.New(o.GatewayURL, o.Key, nil)
	sum := &Summary{Steps: o.Steps}

	// A fresh session: delete any earlier run's state (versions are kept).
	if cur, err := c.GetState(ctx, o.Session); err == nil {
		if err := c.DeleteState(ctx, o.Session, cur.Version); err != nil {
			return nil, err
		}
	} else if client.StatusOf(err) != http.StatusNotFound {
		return nil, err
	}

	// The large tool output goes to evidence; the state keeps its ref.
	var log strings.Builder
	for i := 1; i <= logLines; i++ {
		fmt.Fprintf(&log, "2026-03-14T10:%02d:%02dZ worker-%d webhook delivery attempt=%d status=%s charge=ch_%04d\n",
			i/60%60, i%60, i%7, i%5+1, []string{"timeout", "200", "retry"}[i%3], i%97)
	}
	ev, err := c.PutEvidence(ctx, "text/plain", strings.NewReader(log.String()))
	if err != nil {
		return nil, fmt.Errorf("store evidence: %w", err)
	}
	fmt.Fprintf(out, "stored the incident log as evidence %s… (%d bytes, %d lines)\n", ev.Ref[:15], ev.Bytes, ev.Lines)
	st, err := c.CreateState(ctx, o.Session, groundhog.WorkingState{
		Objective: objective, Constraints: constraints, Findings: []string{}, FailedApproaches: []string{},
		Evidence: []string{"src/webhooks.py", ev.Ref}, NextStep: "Read the incident log around the first timeout",
	})
	if err != nil {
		return nil, fmt.Errorf("create state: %w", err)
	}

	// The full transcript an agent without groundhog would re-send: the
	// tool output in full, then every step's messages.
	transcript := int64(sim.CountTokens(log.String()) + sim.MessageOverhead)
	version := st.Version
	for step := 1; step <= o.Steps; step++ {
		user := fmt.Sprintf("Step %d: continue with the next step.", step)
		res, err := c.Context(ctx, o.Session, contextapi.ContextRequest{
			Shape: groundhog.ShapeChat, Model: model, Tools: tools, Instructions: instructions,
			LastStep:    []json.RawMessage{mustJSON(map[string]string{"role": "user", "content": user})},
			Breakpoints: "auto", ExpectedStepsLeft: ptr(int64(o.Steps - step)),
		})
		if err != nil {
			return nil, fmt.Errorf("step %d: context: %w", step, err)
		}
		reply, usage, _, err := chat(ctx, c, o, res.Request, "agent.step", "")
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", step, err)
		}
		sum.SentInputTokens += usage
		transcript += int64(sim.CountTokens(user) + sim.MessageOverhead)
		sum.FullInputTokens += res.Tokens.Prefix + transcript
		transcript += int64(sim.CountTokens(reply) + sim.MessageOverhead)

		// A lookup every step repeats: the response cache answers it.
		lookup := mustJSON(map[string]any{"model": model, "messages": []any{map[string]string{"role": "user", "content": "Classify incident-1042 by severity."}}})
		if _, _, cache, err := chat(ctx, c, o, lookup, "agent.classify", "use"); err != nil {
			return nil, err
		} else if cache == "hit" {
			sum.CacheHits++
		}

		if step == 3 {
			// The side-effecting tool call, and its retry after a lost answer.
			for attempt := 1; attempt <= 2; attempt++ {
				sum.RefundAttempts++
				op, err := c.BeginOperation(ctx, o.Session+"/refund/ch_0042", map[string]any{"charge": "ch_0042", "amount_cents": 1250}, 0)
				if err != nil {
					return nil, fmt.Errorf("refund: %w", err)
				}
				if op.Claimed() {
					sum.Refunds++ // the one real refund
					if _, err := c.CompleteOperation(ctx, op.ID, op.FencingToken, map[string]string{"refund": "re_0042"}); err != nil {
						return nil, err
					}
				}
			}
		}

		// The step's outcome goes into the state, with CAS on the version.
		finding := fmt.Sprintf("Step %d: %s", step, reply)
		cur, err := c.GetState(ctx, o.Session)
		if err != nil {
			return nil, err
		}
		next, err := c.PatchState(ctx, o.Session, map[string]any{
			"findings":  append(cur.State.Findings, finding),
			"next_step": fmt.Sprintf("Step %d: verify the downstream idempotency key", step+1),
		}, cur.Version)
		if err != nil {
			return nil, fmt.Errorf("step %d: update state: %w", step, err)
		}
		version = next.Version
		sum.LastDecision = res.Compaction.Reason
		if res.Compaction.Compact {
			cr, err := c.Compact(ctx, o.Session, contextapi.CompactRequest{Model: model, ExpectedStepsLeft: ptr(int64(o.Steps - step))}, version)
			if err != nil {
				return nil, fmt.Errorf("step %d: compact: %w", step, err)
			}
			sum.Compactions++
			version = cr.Version
			fmt.Fprintf(out, "step %2d: compacted the state %d → %d tokens (%s)\n", step, cr.TokensBefore, cr.TokensAfter, cr.Decision.Reason)
		}
		fmt.Fprintf(out, "step %2d: sent %5d input tokens (prefix %d, state %d, last step %d); the full transcript would be %7d\n",
			step, usage, res.Tokens.Prefix, res.Tokens.State, res.Tokens.LastStep, res.Tokens.Prefix+transcript)
	}
	final, err := c.GetState(ctx, o.Session)
	if err != nil {
		return nil, err
	}
	sum.FinalVersion = final.Version
	sum.ConstraintsIntact = final.State.Objective == objective && strings.Join(final.State.Constraints, "\x00") == strings.Join(constraints, "\x00")
	if o.FlushLedger != nil {
		if err := o.FlushLedger(ctx); err != nil {
			return nil, err
		}
	}
	if sum.Report, err = c.Report(ctx, time.Now().UTC().Format("2006-01-02")); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return sum, nil
}

// chat sends a chat completions body through the gateway and returns the
// reply text, the provider's prompt token count and the Groundhog-Cache
// answer.
func chat(ctx context.Context, c *client.Client, o Options, body []byte, operation, cache string) (string, int64, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.GatewayURL+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Groundhog-Operation", operation)
	if cache != "" {
		req.Header.Set("Groundhog-Cache", cache)
	}
	if o.Key != "" {
		req.Header.Set("Authorization", "Bearer "+o.Key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", 0, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return "", 0, "", fmt.Errorf("chat completions answered %d: %s", res.StatusCode, b)
	}
	var cc struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens int64 `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &cc); err != nil || len(cc.Choices) == 0 {
		return "", 0, "", fmt.Errorf("chat completions answered no choice: %s", b)
	}
	return cc.Choices[0].Message.Content, cc.Usage.PromptTokens, res.Header.Get("Groundhog-Cache"), nil
}

// Print writes the run's figures and its duplicate-work report.
func (s *Summary) Print(w io.Writer) error {
	var rep struct {
		Day        string `json:"day"`
		Operations []struct {
			Operation     string      `json:"operation"`
			Calls         int64       `json:"calls"`
			Repeats       int64       `json:"repeats"`
			CacheHits     int64       `json:"cache_hits"`
			UpstreamCalls int64       `json:"upstream_calls"`
			Spend         json.Number `json:"spend_usd"`
			Saved         json.Number `json:"saved_usd"`
		} `json:"operations"`
	}
	if err := json.Unmarshal(s.Report, &rep); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(w, "\nduplicate-work report of this run (%s):\n", rep.Day)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tcalls\trepeats\tcache hits\tupstream\tspend USD\tsaved USD\t")
	for _, op := range rep.Operations {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t\n", op.Operation, op.Calls, op.Repeats, op.CacheHits, op.UpstreamCalls, op.Spend, op.Saved)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ninput tokens sent over %d steps: %d; the full transcript would have sent %d (%.1f× more)\n",
		s.Steps, s.SentInputTokens, s.FullInputTokens, float64(s.FullInputTokens)/float64(max(s.SentInputTokens, 1)))
	fmt.Fprintf(w, "refund tool: %d attempts, %d refund performed (the retry was replayed)\n", s.RefundAttempts, s.Refunds)
	fmt.Fprintf(w, "lookups answered from the response cache: %d; state at version %d, constraints intact: %v\n",
		s.CacheHits, s.FinalVersion, s.ConstraintsIntact)
	fmt.Fprintf(w, "compactions: %d; the last step's decision: %s\n", s.Compactions, s.LastDecision)
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func ptr[T any](v T) *T { return &v }
