package groundhog

import (
	"context"
	"time"
)

// ResourceKindGeminiCache is the kind of a Gemini explicit cache: its name
// is the provider's ("cachedContents/{id}").
const ResourceKindGeminiCache = "gemini.cachedContents"

// Resource is a provider-side resource a tenant created through the
// gateway. The provider account is shared by every tenant; this record is
// what makes the resource the tenant's own.
type Resource struct {
	Tenant    string
	Kind      string // ResourceKindGeminiCache, ResourceKindOpenAIFile, …
	Name      string // the provider's name of the resource
	CreatedAt time.Time
}

// ResourceStore records which tenant owns which provider-side resource.
//
// PutResource stores r (storing it again is not an error). OwnedResources
// returns the names among names that tenant owns for kind, in no
// particular order. DeleteResource forgets one; forgetting a resource that
// is not recorded is not an error. Tenants never see each other's
// records.
type ResourceStore interface {
	PutResource(ctx context.Context, r Resource) error
	OwnedResources(ctx context.Context, tenant, kind string, names []string) ([]string, error)
	DeleteResource(ctx context.Context, tenant, kind, name string) error
}

// The kinds of the OpenAI and Anthropic resources a tenant creates: their
// names are the provider's ids ("file-…", "batch_…", "upload_…",
// "msgbatch_…", "file_…").
const (
	ResourceKindOpenAIFile            = "openai.files"
	ResourceKindOpenAIBatch           = "openai.batches"
	ResourceKindOpenAIUpload          = "openai.uploads"
	ResourceKindAnthropicFile         = "anthropic.files"
	ResourceKindAnthropicMessageBatch = "anthropic.message_batches"
)

// The kinds of the other OpenAI resources a tenant creates by their own
// API: vector stores ("vs_…"), conversations ("conv_…"), evals
// ("eval_…"), fine-tuning jobs ("ftjob-…") and the models those jobs make
// ("ft:…").
const (
	ResourceKindOpenAIVectorStore    = "openai.vector_stores"
	ResourceKindOpenAIConversation   = "openai.conversations"
	ResourceKindOpenAIEval           = "openai.evals"
	ResourceKindOpenAIFineTuningJob  = "openai.fine_tuning.jobs"
	ResourceKindOpenAIFineTunedModel = "openai.fine_tuned_models"
)

// The kinds of the OpenAI objects a model call makes: stored responses
// ("resp_…", a Responses call with store not false), stored chat
// completions ("chatcmpl-…", a chat call with store true) and containers
// ("cntr_…", made by their own API or by a code interpreter tool whose
// container is "auto").
const (
	ResourceKindOpenAIResponse       = "openai.responses"
	ResourceKindOpenAIChatCompletion = "openai.chat.completions"
	ResourceKindOpenAIContainer      = "openai.containers"
)

// The kinds of the Gemini resources a tenant creates besides explicit
// caches: their names are Google's ("files/{id}", "batches/{id}",
// "tunedModels/{id}", "fileSearchStores/{id}", and
// "models/{model}/operations/{id}" for the operation a predictLongRunning
// starts); a resumable upload in progress is named by its upload_id.
//
// ResourceKindGeminiInputFile records, under the file's name, that a
// file's bytes went through the gateway and named only resources the
// tenant owned: only such a file can be a batch's input.
const (
	ResourceKindGeminiFile            = "gemini.files"
	ResourceKindGeminiBatch           = "gemini.batches"
	ResourceKindGeminiTunedModel      = "gemini.tunedModels"
	ResourceKindGeminiUpload          = "gemini.uploads"
	ResourceKindGeminiFileSearchStore = "gemini.fileSearchStores"
	ResourceKindGeminiOperation       = "gemini.operations"
	ResourceKindGeminiInputFile       = "gemini.files.input"
)

// ResourceKindMCPSession is an MCP session a tenant opened through the
// gateway: its name is "SERVER/SESSION-ID" (the upstream server's session
// id, or for a stdio server the gateway's own).
const ResourceKindMCPSession = "mcp.sessions"
