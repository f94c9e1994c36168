package sqlite

import (
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/storetest"
)

func TestStateConformance(t *testing.T) {
	storetest.RunState(t, func(t *testing.T) groundhog.StateStore { return openTest(t) })
}
