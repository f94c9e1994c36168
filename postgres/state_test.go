package postgres

import (
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/storetest"
)

func TestStateConformance(t *testing.T) {
	storetest.PostgresURL(t)
	storetest.RunState(t, func(t *testing.T) groundhog.StateStore { return openTest(t) })
}

func TestEvidenceConformance(t *testing.T) {
	storetest.PostgresURL(t)
	storetest.RunEvidence(t, func(t *testing.T) groundhog.EvidenceStore { return openTest(t) })
}

func TestResourceConformance(t *testing.T) {
	storetest.RunResources(t, func(t *testing.T) groundhog.ResourceStore { return openTest(t) })
}

func TestRentedCacheConformance(t *testing.T) {
	storetest.RunRentedCaches(t, func(t *testing.T) groundhog.RentedCacheStore { return openTest(t) })
}
