package storetest

import (
	"context"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"
)

// RedisCommands is a go-redis hook that counts the commands a client
// sends, each command of a pipeline or transaction included (a script's
// first run is two: EVALSHA, then EVAL), and the round trips they took (a
// pipeline or transaction is one). Add it with Client.AddHook.
type RedisCommands struct{ n, trips atomic.Int64 }

// Count returns the commands sent since the hook was added.
func (c *RedisCommands) Count() int64 { return c.n.Load() }

// RoundTrips returns the round trips made since the hook was added.
func (c *RedisCommands) RoundTrips() int64 { return c.trips.Load() }

func (c *RedisCommands) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (c *RedisCommands) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		c.n.Add(1)
		c.trips.Add(1)
		return next(ctx, cmd)
	}
}

func (c *RedisCommands) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		c.trips.Add(1)
		return next(ctx, cmds)
	}
}
