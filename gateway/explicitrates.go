package gateway

import (
	"time"

	"github.com/groundhog-ai/groundhog"
)

// storagePerHour is p's explicit-cache storage rent, µ$ per Mtok per hour
// (0: not priced).
func storagePerHour(p groundhog.Price) int64 { return 0 }

// rentCost is the storage rent of a cache of tokens tokens of model that
// lived from created to end, per whole second as the provider bills it.
func (s *Server) rentCost(model string, tokens int64, created, end time.Time) groundhog.Money {
	return groundhog.CostUnknown
}
