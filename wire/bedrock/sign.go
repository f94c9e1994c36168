package bedrock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

// SigningName is the SigV4 service name of the Bedrock runtime.
const SigningName = "bedrock"

// SignFunc signs one upstream request whose body is body.
type SignFunc func(ctx context.Context, req *http.Request, body []byte) error

// NewSigner returns a SignFunc that signs requests with SigV4 for region
// with the credentials of creds (retrieved, and refreshed, per request by
// the provider; wrap it in aws.NewCredentialsCache to cache them). now
// stamps the signature; nil is time.Now.
func NewSigner(creds aws.CredentialsProvider, region string, now func() time.Time) SignFunc {
	if now == nil {
		now = time.Now
	}
	s := v4.NewSigner()
	return func(ctx context.Context, req *http.Request, body []byte) error {
		c, err := creds.Retrieve(ctx)
		if err != nil {
			return fmt.Errorf("bedrock: AWS credentials: %w", err)
		}
		sum := sha256.Sum256(body)
		if err := s.SignHTTP(ctx, c, req, hex.EncodeToString(sum[:]), SigningName, region, now()); err != nil {
			return fmt.Errorf("bedrock: sign request: %w", err)
		}
		return nil
	}
}

// LoadSigner builds a SignFunc from the standard AWS configuration chain
// (environment, shared config and credentials files, web identity, SSO,
// container and instance roles). region "" takes the chain's region; the
// region used is returned. It fails when no region can be found.
func LoadSigner(ctx context.Context, region string) (SignFunc, string, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("bedrock: load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, "", fmt.Errorf("bedrock: no AWS region (set bedrock_region or AWS_REGION)")
	}
	return NewSigner(cfg.Credentials, cfg.Region, nil), cfg.Region, nil
}
