package config

import (
	"strings"
	"testing"
)

// TestUpstreamBedrock: upstream "bedrock" points the OpenAI routes at
// Bedrock's OpenAI-compatible endpoint of the Bedrock region (or of an
// explicit bedrock_upstream), and needs one of them.
func TestUpstreamBedrock(t *testing.T) {
	c := Default()
	c.Upstream, c.BedrockRegion = "bedrock", "us-west-2"
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if !c.OpenAIOnBedrock || c.Upstream != "https://bedrock-runtime.us-west-2.amazonaws.com/openai/v1" {
		t.Fatalf("upstream %q (on Bedrock %v)", c.Upstream, c.OpenAIOnBedrock)
	}
	c = Default()
	c.Upstream, c.BedrockUpstream = "bedrock", "https://vpce-1.bedrock-runtime.eu-west-1.vpce.amazonaws.com/"
	if err := c.Finish(); err != nil || c.Upstream != "https://vpce-1.bedrock-runtime.eu-west-1.vpce.amazonaws.com/openai/v1" {
		t.Fatalf("upstream %q (%v)", c.Upstream, err)
	}
	c = Default()
	c.Upstream = "bedrock"
	if err := c.Finish(); err == nil || !strings.Contains(err.Error(), "bedrock_region") {
		t.Fatalf("upstream bedrock without a region: %v", err)
	}
}
