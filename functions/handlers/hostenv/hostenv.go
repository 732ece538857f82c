// Package hostenv is what both assemblies (functions/handlers/assembly, local/runner) hand
// core/host to apply a host file: the tool kinds this build has (Kinds) and their
// dependencies over the AWS SDK (Deps: a Lambda invoker, the Secrets Manager resolver with
// its cache, the SigV4 signer). The AWS configuration is loaded only when a host file
// declares tools, so a host without tools never needs credentials.
package hostenv

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/core/hosttool/httptool"
	"github.com/archmax-ai/archmax/core/hosttool/lambdatool"
	"github.com/archmax-ai/archmax/core/hosttool/mcptool"
	"github.com/archmax-ai/archmax/core/hosttool/secrets"
)

// Kinds are the tool kinds of this build.
func Kinds() map[string]hosttool.Builder {
	return map[string]hosttool.Builder{
		hostconfig.KindLambda: lambdatool.New,
		hostconfig.KindHTTP:   httptool.New,
		hostconfig.KindMCP:    mcptool.New,
	}
}

// AWS configures Deps.
type AWS struct {
	// Config loads the AWS configuration (the function's, or the standard chain locally);
	// called once, on the first host file that declares tools.
	Config func(ctx context.Context) (aws.Config, error)
	// LambdaEndpoint overrides the Lambda endpoint of lambda tools (local and test use; the
	// SDK's AWS_ENDPOINT_URL_LAMBDA works too). Secrets Manager takes the SDK's own
	// AWS_ENDPOINT_URL_SECRETS_MANAGER.
	LambdaEndpoint string
}

// Local is AWS over the standard credential chain (region "" = the environment's): what
// local runs and `archmax validate --online` use.
func Local(region string) AWS {
	return AWS{Config: func(ctx context.Context) (aws.Config, error) {
		var opts []func(*config.LoadOptions) error
		if region != "" {
			opts = append(opts, config.WithRegion(region))
		}
		return config.LoadDefaultConfig(ctx, opts...)
	}}
}

// Deps returns a hosttool.Deps source for host.Env.Deps: built once, then shared by every
// rebuild (so the secrets cache survives a changed host file).
func (a AWS) Deps() func(ctx context.Context) (hosttool.Deps, error) {
	var (
		mu   sync.Mutex
		deps *hosttool.Deps
	)
	return func(ctx context.Context) (hosttool.Deps, error) {
		mu.Lock()
		defer mu.Unlock()
		if deps != nil {
			return *deps, nil
		}
		cfg, err := a.Config(ctx)
		if err != nil {
			return hosttool.Deps{}, err
		}
		lc := lambda.NewFromConfig(cfg, func(o *lambda.Options) {
			if a.LambdaEndpoint != "" {
				o.BaseEndpoint = aws.String(a.LambdaEndpoint)
			}
		})
		resolver := secrets.New(secretsmanager.NewFromConfig(cfg))
		deps = &hosttool.Deps{
			Lambda: lambdatool.SDKInvoker(lc),
			Secret: resolver.Resolve,
			Sign:   httptool.SigV4Signer(cfg),
		}
		return *deps, nil
	}
}
