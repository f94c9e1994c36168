package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Operation is a tool operation record (the operations API). Status is
// "running" when this caller holds the lease and must do the work, then
// complete or fail it with FencingToken; "completed" or "failed" when the
// work was already done: Result is its stored result and Replayed true.
type Operation struct {
	ID             string          `json:"id"`
	Key            string          `json:"key"`
	Status         string          `json:"status"`
	FencingToken   int64           `json:"fencing_token"`
	LeaseExpiresAt *time.Time      `json:"lease_expires_at,omitempty"`
	Attempts       int             `json:"attempts"`
	CreatedAt      time.Time       `json:"created_at"`
	ExpiresAt      *time.Time      `json:"expires_at,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Replayed       bool            `json:"-"`
}

// Claimed reports whether the caller holds the lease and must run the tool.
func (o *Operation) Claimed() bool { return o.Status == "running" && !o.Replayed }

const operationsPath = "/groundhog/v1/operations"

// BeginOperation claims the operation identified by key for payload (any
// JSON: the same key with another payload is a 422 *Error). While another
// attempt holds the lease it is a 409 *Error; wait > 0 asks the gateway to
// wait that long for it instead (Prefer: wait).
func (c *Client) BeginOperation(ctx context.Context, key string, payload any, wait time.Duration) (*Operation, error) {
	p, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	hdr := http.Header{}
	if wait > 0 {
		hdr.Set("Prefer", "wait="+itoa(int64(wait/time.Second)))
	}
	var op Operation
	h, status, err := c.doJSON(ctx, http.MethodPost, operationsPath, map[string]any{"key": key, "payload": json.RawMessage(p)}, &op, hdr,
		http.StatusCreated, http.StatusOK)
	if err != nil {
		return nil, err
	}
	op.Replayed = status == http.StatusOK || h.Get("Idempotent-Replayed") == "true"
	return &op, nil
}

// CompleteOperation stores result as the operation's outcome (fenced: a
// superseded token is a 409 *Error and changes nothing).
func (c *Client) CompleteOperation(ctx context.Context, id string, token int64, result any) (*Operation, error) {
	return c.fenced(ctx, id, "complete", map[string]any{"fencing_token": token, "result": result})
}

// FailOperation records a failure; retryable releases the operation so the
// next attempt runs it again, otherwise result is replayed to every retry.
func (c *Client) FailOperation(ctx context.Context, id string, token int64, result any, retryable bool) (*Operation, error) {
	return c.fenced(ctx, id, "fail", map[string]any{"fencing_token": token, "result": result, "retryable": retryable})
}

// RenewOperation extends the lease of a running operation.
func (c *Client) RenewOperation(ctx context.Context, id string, token int64) (*Operation, error) {
	return c.fenced(ctx, id, "renew", map[string]any{"fencing_token": token})
}

// GetOperation reads an operation record.
func (c *Client) GetOperation(ctx context.Context, id string) (*Operation, error) {
	var op Operation
	if _, _, err := c.doJSON(ctx, http.MethodGet, operationsPath+"/"+url.PathEscape(id), nil, &op, nil, http.StatusOK); err != nil {
		return nil, err
	}
	return &op, nil
}

func (c *Client) fenced(ctx context.Context, id, verb string, body map[string]any) (*Operation, error) {
	var op Operation
	if _, _, err := c.doJSON(ctx, http.MethodPost, operationsPath+"/"+url.PathEscape(id)+"/"+verb, body, &op, nil, http.StatusOK); err != nil {
		return nil, err
	}
	return &op, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
