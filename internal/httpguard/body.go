package httpguard

import (
	"errors"
	"net"
	"os"

	"github.com/groundhog-ai/groundhog"
)

// BodyError is the error to answer for a request body that could not be
// read: code ESLOWREQUEST (408) when the connection's read deadline cut it
// off — the client sent slower than Options.MinBodyRate — else EINVALID
// (400). The cause stays in the error for logs, out of the client's message.
func BodyError(err error) error {
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return groundhog.WrapError(groundhog.ESLOWREQUEST,
			"the request body arrived too slowly and was cut off; send it at a steady rate", err)
	}
	return groundhog.WrapError(groundhog.EINVALID, "could not read the request body", err)
}
